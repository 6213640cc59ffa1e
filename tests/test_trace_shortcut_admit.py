"""The v1 shortcut's one-pass judgement of decodes and whole-prompt admissions
(`conformance/trace/cleanstep_admit.py`) changes no verdict. On the reference's dense trace it takes the
admission steps; with one admission step edited to break a rule, the verdict with the shortcut (rule,
step, message, line, steps and lines read; every rule, the rule alone, every rule but it) is the
monitor's alone, and the one-pass judgement was asked that step and declined it. Negative controls:
each of its conditions planted out of it (`PLANTED`), the same comparison on the edit aimed at it finds
another verdict (or the planted judgement fails outright); KV's return check, which it shares with the
entry-by-entry judgement, planted out catches the edits of "finished". The decodes it says the next step
shows (`next_decodes`) are tested the same way, on edits of the step after an admission."""

from __future__ import annotations

import inspect
import io
import json
import sys
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_trace_shortcut import differences, judged, kv_not_compared

from stallfree.conformance.trace import cleanstep_admit, cleanstep_v1
from stallfree.conformance.trace.record import record_trace
from stallfree.reference import Scheduler

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
from check_trace_throughput import dense_workload

NEW = 10**6  # a rid the dense trace never uses
Data = dict[str, Any]


def dense() -> list[bytes]:
    """The reference's dense trace (B = 64, S = 16): one step in three admits a request, about 13 decode."""
    out = io.StringIO()
    record_trace(dense_workload(300), Scheduler, out)
    return [line.encode() + b"\n" for line in out.getvalue().splitlines()]


def admission_line(lines: list[bytes]) -> int:
    """The first line past step 100 that admits a whole prompt after a step of decodes alone."""
    for at in range(100, len(lines) - 1):
        data, before = json.loads(lines[at]), json.loads(lines[at - 1])
        if data.get("add") and len(data["plan"]) == len(before["plan"]) + 1 and "add" not in before:
            return at
    raise AssertionError("no admission step in the dense trace")


def edited(lines: list[bytes], at: int, edit: Callable[[Data, Data], None]) -> list[bytes]:
    """The trace with `edit(header, step)` applied to the header and line `at`."""
    header, data = json.loads(lines[0]), json.loads(lines[at])
    edit(header, data)
    return [json.dumps(header).encode() + b"\n", *lines[1:at], json.dumps(data).encode() + b"\n", *lines[at + 1:]]


def admitted(data: Data) -> list[int]:
    return data["plan"][-1]


def second_waiting_first(header: Data, data: Data) -> None:
    """A request added before the admitted one, left waiting: the admission is not the head (FCFS); its
    prompt fills the budget, so that no budget is left (WORK-CONSERVING holds)."""
    longer = header["config"]["token_budget"] - (len(data["plan"]) - 1) - admitted(data)[1]
    data["add"][-1][1] += longer
    admitted(data)[1] += longer
    data["add"].insert(0, [NEW, *data["add"][-1][1:]])  # the same prompt and max_new as the admitted one


def second_waiting_after(header: Data, data: Data) -> None:
    """A request added after the admitted one, left waiting while budget is left (WORK-CONSERVING)."""
    data["add"].append([NEW, 50, 40])


def longer_prompt(header: Data, data: Data) -> None:
    """The admitted request's prompt two tokens longer, given whole: over the budget (BUDGET)."""
    data["add"][-1][1] += 2
    admitted(data)[1] += 2


# edit name: (the rule the monitor finds, the edit); PROTOCOL is always checked, so its edits select TOKENS
EDITS: dict[str, tuple[str, Callable[[Data, Data], None]]] = {
    "a token twice": ("TOKENS", lambda h, d: d["emitted"].append(d["emitted"][0])),
    "a decode of 2": ("TOKENS", lambda h, d: d["plan"].__setitem__(0, [d["plan"][0][0], 2])),
    "a token from a rid not planned": ("PROTOCOL", lambda h, d: d["emitted"].__setitem__(0, NEW)),
    "an admission that is not the head": ("FCFS", second_waiting_first),
    "an admission of a rid not added": ("PROTOCOL", lambda h, d: (admitted(d).__setitem__(0, NEW),
                                                                  d["emitted"].__setitem__(-1, NEW))),
    "an admission past its prompt": ("PREFILL-ONCE", lambda h, d: admitted(d).__setitem__(1, admitted(d)[1] + 1)),
    "an admission's first token from another rid": ("PROTOCOL", lambda h, d: d["emitted"].__setitem__(-1, NEW)),
    "a second admission of a rid not added": ("PROTOCOL", lambda h, d: (d["plan"].append([NEW, 1]),
                                                                        d["emitted"].append(NEW))),
    "over the budget": ("BUDGET", longer_prompt),
    "over the slots": ("SLOTS", lambda h, d: h["config"].__setitem__("max_seqs", 13)),
    "over the KV": ("KV", lambda h, d: h["config"].__setitem__("kv_tokens", 13 * 90 + 30)),
    "budget left while the next one fits": ("WORK-CONSERVING", second_waiting_after),
    "KV never back": ("KV", lambda h, d: d["finished"].pop()),
    "KV back early": ("KV", lambda h, d: d["finished"].append(admitted(d)[0])),
}

# the condition of cleanstep_admit planted out (its text, and what replaces it): edit names it must catch
PLANTED: dict[tuple[str, str], tuple[str, ...]] = {
    ("len(emitted) != len(plan) or ", ""): ("a token twice",),
    (" or num_admitted > len(shadow.waiting)", ""): ("a second admission of a rid not added",),
    ("plan[:num] != decodes or ", ""): ("a decode of 2",),
    (" or emitted[:num] != tokens", ""): ("a token from a rid not planned",),
    ("rid != request.rid or ", ""): ("an admission that is not the head", "an admission of a rid not added"),
    ("end != request.prompt_len or ", ""): ("an admission past its prompt",),
    (" or emitted[num + i] != rid", ""): ("an admission's first token from another rid",),
    ("clean.tokens > cfg.token_budget or ", ""): ("over the budget",),
    ("num_running > cfg.max_seqs or ", ""): ("over the slots",),
    (" or free_kv < 0", ""): ("over the KV",),
    ("return waiting[len(clean.admitted)].request.reservation > free_kv", "return True"):
        ("budget left while the next one fits",),
}


def asked(monkeypatch: pytest.MonkeyPatch, judge: Callable[..., Any] | None = None) -> Counter[tuple[int, bool]]:
    """Count (step, whether it gave a judgement) for each step the one-pass judgement is asked of."""
    judge = judge or cleanstep_admit.whole_admissions
    calls: Counter[tuple[int, bool]] = Counter()

    def counting(shown: Any, due: Any, shadow: Any, item: Any) -> Any:
        clean = judge(shown, due, shadow, item)
        calls[item.step, clean is not None] += 1
        return clean

    monkeypatch.setattr(cleanstep_v1, "whole_admissions", counting)
    return calls


def test_the_dense_trace_s_admission_steps_are_taken_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = dense()
    calls = asked(monkeypatch)
    taken: Counter[str] = Counter()
    steps = len(lines) - 2  # the header and the end line
    assert judged(lines, None, True, taken) == judged(lines, None, False, Counter()) == (None, steps, steps + 2, True)
    admissions = sum(1 for line in lines[1:-1] if json.loads(line).get("add"))
    given = sum(n for (_, gave), n in calls.items() if gave)
    assert given >= admissions - 20, (given, admissions)  # all but the first, while fewer than 13 decode
    assert taken["steps"] == steps


@pytest.mark.parametrize("name", EDITS)
def test_an_edited_admission_step_is_judged_alike(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rule, edit = EDITS[name]
    lines = dense()
    at = admission_line(lines)
    step = json.loads(lines[at])["step"]
    if name in ("over the slots", "over the KV"):  # the header edit breaks the first admission to 14 running
        at = next(i for i in range(1, len(lines) - 1) if len(json.loads(lines[i])["plan"]) == 14)
        step = json.loads(lines[at])["step"]
    trace = edited(lines, at, edit)
    calls = asked(monkeypatch)
    found, _, broken = differences(trace, "TOKENS" if rule == "PROTOCOL" else rule)
    assert not found, found
    assert rule in broken, (rule, broken)
    assert calls[step, False] + calls[step, True] > 0, f"the one-pass judgement was not asked of step {step}"
    if rule != "KV" or name.startswith("over"):
        assert calls[step, True] == 0  # declined: the plan breaks a rule it checks
    else:
        assert calls[step, False] == 0  # "finished" is KV's return check's, after the plan is judged clean


def planted(text: str, by: str) -> Any:
    """cleanstep_admit with `text` replaced by `by`: its one-pass judgement without that condition."""
    source = inspect.getsource(cleanstep_admit)
    assert source.count(text) == 1, text
    module = types.ModuleType("planted")
    module.__package__ = cleanstep_admit.__package__
    exec(compile(source.replace(text, by), "planted", "exec"), module.__dict__)
    return module.whole_admissions


@pytest.mark.parametrize(("condition", "names"), list(PLANTED.items()), ids=[t for t, _ in PLANTED])
def test_a_one_pass_judgement_without_a_condition_is_caught(condition: tuple[str, str], names: tuple[str, ...],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    lines = dense()
    for name in names:
        rule, edit = EDITS[name]
        at = admission_line(lines)
        if name in ("over the slots", "over the KV"):
            at = next(i for i in range(1, len(lines) - 1) if len(json.loads(lines[i])["plan"]) == 14)
        asked(monkeypatch, planted(*condition))
        try:
            found = differences(edited(lines, at, edit), "TOKENS" if rule == "PROTOCOL" else rule)[0]
        except (IndexError, KeyError, AssertionError) as error:  # the planted judgement read past what it checked
            found = [f"failed: {error!r}"]
        assert found, f"without {condition[0]!r}, {name!r} was judged as the monitor judges it"


def test_a_shortcut_without_kv_s_return_check_is_caught_on_an_admission_step(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = dense()
    at = admission_line(lines)
    monkeypatch.setattr(cleanstep_v1, "_kv_back", kv_not_compared)
    for name in ("KV never back", "KV back early"):
        found = differences(edited(lines, at, EDITS[name][1]), "KV")[0]
        assert found, f"without the KV comparison, {name!r} was judged as the monitor judges it"


def reversed_decodes(lines: list[bytes], at: int) -> list[bytes]:
    """The two decode steps before line `at` and its decodes in reverse order (the newest first): then the
    request that ends at `at` is not the first of the decodes (order is not a rule)."""
    out = list(lines)
    for i in (at - 2, at - 1, at):
        data = json.loads(out[i])
        num = len(json.loads(out[at - 1])["plan"])
        data["plan"][:num] = data["plan"][:num][::-1]
        data["emitted"][:num] = data["emitted"][:num][::-1]
        out[i] = json.dumps(data).encode() + b"\n"
    return out


def next_line(lines: list[bytes], at: int, edit: Callable[[Data, Data], None]) -> list[bytes]:
    """The trace with `edit(step at, step at + 1)` applied to both lines."""
    this, after = json.loads(lines[at]), json.loads(lines[at + 1])
    edit(this, after)
    return [*lines[:at], json.dumps(this).encode() + b"\n", json.dumps(after).encode() + b"\n", *lines[at + 2:]]


def ended_decoded_again(this: Data, after: Data) -> None:
    after["plan"].insert(0, [this["finished"][0], 1])
    after["emitted"].insert(0, this["finished"][0])


def admitted_left_out(this: Data, after: Data) -> None:
    after["plan"].pop()
    after["emitted"].pop()


def admitted_ends_at_once(this: Data, after: Data) -> None:
    """The admitted request's max_new is 1 (it ends with its first token), and the next step decodes it."""
    this["add"][-1][2] = 1
    this["finished"].append(admitted(this)[0])


def the_oldest_kept_and_the_newest_left_out(this: Data, after: Data) -> None:
    """With the decodes newest first: the next step decodes, in the same order, all but the newest (the one
    that ended among them), then the admitted one."""
    after["plan"] = [*this["plan"][1:-1], [admitted(this)[0], 1]]
    after["emitted"] = this["emitted"][1:]


# edit of the admission step and the next one: (the rule the monitor finds, whether the decodes are
# reversed first, the edit, the text of next_decodes planted out and what replaces it)
NEXT: dict[str, tuple[str, bool, Callable[[Data, Data], None], tuple[str, str]]] = {
    "the ended request decoded again": ("TOKENS", False, ended_decoded_again,
                                        ("decodes, tokens = decodes[1:], tokens[1:]", "pass")),
    "the admitted request left out": ("DECODE-FIRST", False, admitted_left_out,
                                      ("decodes + [[rid, 1] for rid in rids], tokens + rids", "decodes, tokens")),
    "an admission that ended at once decoded": ("TOKENS", False, admitted_ends_at_once,
                                                ("len(clean.ending) != (len(due) if due else 0)", "False")),
    "the oldest decoded again, the newest left out": ("TOKENS", True, the_oldest_kept_and_the_newest_left_out,
                                                      (" or tokens[0] != due[0] or decodes[0][0] != due[0]", "")),
}


def next_trace(name: str) -> tuple[list[bytes], int]:
    lines = dense()
    at = admission_line(lines)
    _, reverse, edit, _ = NEXT[name]
    return next_line(reversed_decodes(lines, at) if reverse else lines, at, edit), json.loads(lines[at])["step"]


def test_the_decodes_after_a_reversed_admission_step_are_judged_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = dense()
    at = admission_line(lines)
    calls = asked(monkeypatch)
    trace = reversed_decodes(lines, at)
    assert judged(trace, None, True, Counter()) == judged(trace, None, False, Counter())
    assert judged(trace, None, False, Counter())[0] is None
    assert calls[json.loads(lines[at])["step"], True] == 1  # taken in one pass, the ended one not the first


@pytest.mark.parametrize("name", NEXT)
def test_the_step_after_an_admission_is_judged_alike(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rule = NEXT[name][0]
    trace, step = next_trace(name)
    calls = asked(monkeypatch)
    found, _, broken = differences(trace, rule)
    assert not found, found
    assert rule in broken, (rule, broken)
    assert calls[step, True] > 0  # the admission step was taken in one pass: the next step's decodes came from it


@pytest.mark.parametrize("name", NEXT)
def test_next_decodes_without_a_condition_is_caught(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rule, _, _, (text, by) = NEXT[name]
    trace, _ = next_trace(name)
    source = inspect.getsource(cleanstep_admit)
    assert source.count(text) == 1, text
    module = types.ModuleType("planted")
    module.__package__ = cleanstep_admit.__package__
    exec(compile(source.replace(text, by), "planted", "exec"), module.__dict__)
    monkeypatch.setattr(cleanstep_v1, "next_decodes", module.next_decodes)
    found = differences(trace, rule)[0]
    assert found, f"next_decodes without {text!r}: {name!r} was judged as the monitor judges it"
