"""The v1 checker's clean-step shortcut (`conformance/trace/cleanstep_v1.py`) changes no verdict: on traces
that break each rule (the faults' own runs, recorded, and reference traces with one step edited to break
a rule), checked with every rule, with the broken rule alone, and with every rule but it, the verdict with
the shortcut (rule, step, message, line, steps and lines read) is the verdict of the monitor alone. The
shortcut must have taken steps of each trace the comparison counts. Negative control: a shortcut that
skips the policy rules, or KV's return check, is caught giving another verdict."""

from __future__ import annotations

import io
import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from stallfree.conformance.trace import cleanstep_v1, tracecheck
from stallfree.conformance.trace.record import record_trace
from stallfree.conformance.trace.tracecheck import check_trace
from stallfree.conformance.trace.tracefile import TraceError
from stallfree.faults import FAULTS
from stallfree.reference import Scheduler
from stallfree.spec import RULE_IDS
from stallfree.testing.generate import Ranges, random_workload

SMALL = Ranges(max_budget=16, max_seqs=4, max_prompt=40, max_new=6, max_requests=8)
LIFECYCLE = Ranges(max_budget=16, max_seqs=4, max_prompt=40, max_new=6, max_requests=8, stop_share=0.5,
                   cancel_share=0.3)
SEEDS = 400  # workloads tried per fault
TRACES_PER_RULE = 4


def recorded(seed: int, factory: Any, ranges: Ranges) -> list[bytes] | None:
    out = io.StringIO()
    try:
        record_trace(random_workload(random.Random(seed), ranges), factory, out)
    except Exception:  # a fault's run may break its own bookkeeping: then no trace
        return None
    return [line.encode() + b"\n" for line in out.getvalue().splitlines()]


def judged(lines: list[bytes], rules: list[str] | None, shortcut: bool, taken: Counter[str]) -> tuple[Any, ...]:
    """The verdict as a tuple of everything a report shows, or the format error; `taken` counts the
    steps the shortcut judged."""
    step, again = cleanstep_v1.Shortcut.step, cleanstep_v1.Shortcut.again

    def counting(self: Any, engine: Any, item: Any) -> bool:
        took = step(self, engine, item)
        taken["steps"] += took
        return took

    def counting_again(self: Any) -> bool:  # a line repeating a step the shortcut took (`repeats`)
        took = again(self)
        taken["steps"] += took
        return took

    saved = tracecheck.usable, step, again
    tracecheck.usable = cleanstep_v1.usable if shortcut else (lambda monitor: False)  # type: ignore[assignment]
    cleanstep_v1.Shortcut.step, cleanstep_v1.Shortcut.again = counting, counting_again  # type: ignore[method-assign]
    try:
        v = check_trace(lines, rules)
    except TraceError as error:
        return ("TraceError", str(error))
    finally:
        tracecheck.usable, cleanstep_v1.Shortcut.step, cleanstep_v1.Shortcut.again = saved  # type: ignore[method-assign]
    broken = v.violation
    found = None if broken is None else (broken.rule, broken.step, broken.message, v.violation_line)
    return found, v.steps, v.lines, v.ended


def differences(lines: list[bytes], rule: str) -> tuple[list[str], int, set[str]]:
    """Where the shortcut's verdict is not the monitor's, over three selections of rules; the steps the
    shortcut took; and the rules the monitor found broken."""
    taken: Counter[str] = Counter()
    found, broken = [], set()
    for rules in (None, [rule], [r for r in RULE_IDS if r != rule]):
        full = judged(lines, rules, False, Counter())
        fast = judged(lines, rules, True, taken)
        if full != fast:
            found.append(f"rules {rules}: monitor {full}, shortcut {fast}")
        if full[0] is not None and full[0] != "TraceError":
            broken.add(full[0][0])
    return found, taken["steps"], broken


def fault_traces(rule: str) -> Iterator[list[bytes]]:
    """Recorded runs of FAULTS[rule] that break `rule` (stops and cancels, which CANCEL needs, too)."""
    kept = 0
    for ranges in (SMALL, LIFECYCLE):
        for seed in range(SEEDS):
            lines = recorded(seed, FAULTS[rule], ranges)
            if lines is None or judged(lines, [rule], False, Counter())[0] in (None, "TraceError"):
                continue
            yield lines
            kept += 1
            if kept == TRACES_PER_RULE:
                return


@pytest.mark.parametrize("rule", [r for r in RULE_IDS if r != "KV"])  # KV: a recorded trace's "finished" is
def test_a_faults_trace_is_judged_alike_with_the_shortcut(rule: str) -> None:  # the monitor's (edits below)
    total = 0
    for lines in fault_traces(rule):
        found, taken, broken = differences(lines, rule)
        assert not found, found
        assert rule in broken
        total += taken
    shown = f"the shortcut took no step of a trace breaking {rule}: the comparison shows nothing"
    assert total > 0, shown  # a count of steps the shortcut took, no clock: no load changes it


def edits(rng: random.Random, data: dict[str, Any]) -> Iterator[tuple[str, Callable[[], None]]]:
    """Ways to break one step line, each named for the rule it aims at."""
    plan, emitted, finished = data["plan"], data["emitted"], data["finished"]
    yield "KV", lambda: finished.append(plan[0][0])  # KV back early (or twice: PROTOCOL)
    if finished:
        yield "KV", lambda: finished.pop()  # KV never back
    yield "TOKENS", lambda: emitted.append(emitted[0]) if emitted else emitted.append(plan[0][0])
    yield "TOKENS", lambda: plan.__setitem__(0, [plan[0][0], plan[0][1] + 1])  # a decode of 2, a chunk too long
    yield "ONE-ENTRY", lambda: plan.append(list(plan[0]))
    yield "DECODE-FIRST", lambda: (plan.pop(0), emitted.remove(emitted[0]) if emitted else None)
    yield "FIRST-TOKEN", lambda: emitted.pop() if emitted else None
    yield "BUDGET", lambda: plan.append([rng.randrange(50), 1])  # an unknown, ended or waiting rid
    yield "SLOTS", lambda: data.update(plan=list(reversed(plan)))


def edited_traces(seeds: int) -> Iterator[tuple[str, list[bytes]]]:
    """Reference traces (plain, and with stops and cancels) with one step line edited."""
    for seed in range(seeds):
        for ranges in (SMALL, LIFECYCLE):
            lines = recorded(seed, Scheduler, ranges)
            assert lines is not None
            at = random.Random(seed).randrange(1, len(lines) - 1)
            if not json.loads(lines[at]).get("plan"):
                continue
            for i in range(len(list(edits(random.Random(seed), json.loads(lines[at]))))):
                data = json.loads(lines[at])
                aim, edit = list(edits(random.Random(seed), data))[i]
                edit()
                yield aim, [*lines[:at], json.dumps(data).encode() + b"\n", *lines[at + 1:]]


def test_an_edited_reference_trace_is_judged_alike_with_the_shortcut() -> None:
    taken, broken_by = 0, Counter[str]()
    for aim, lines in edited_traces(60):
        found, took, broken = differences(lines, aim)
        assert not found, found
        taken += took
        broken_by.update(broken)
    assert taken > 0
    for rule in ("KV", "TOKENS", "ONE-ENTRY", "DECODE-FIRST", "FIRST-TOKEN", "PROTOCOL"):
        assert broken_by[rule] > 0, (rule, broken_by)  # each edit's rule was broken somewhere, and judged alike


def test_a_cancel_on_the_end_line_ends_a_request_the_shortcut_was_judging() -> None:
    lines = [
        b'{"stallfree_trace": 1, "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64}}\n',
        b'{"step": 0, "add": [[0, 4, 9]], "plan": [[0, 4]], "emitted": [0], "finished": []}\n',
        b'{"step": 1, "plan": [[0, 1]], "emitted": [0], "finished": []}\n',
        b'{"step": 2, "plan": [[0, 1]], "emitted": [0], "finished": []}\n',
        b'{"end": true, "cancel": [0]}\n',
    ]
    taken = Counter[str]()
    assert judged(lines, None, True, taken) == judged(lines, None, False, Counter()) == (None, 3, 5, True)
    assert taken["steps"] == 3


def test_reference_traces_are_judged_by_the_shortcut() -> None:
    taken = Counter[str]()
    for seed in range(40):
        lines = recorded(seed, Scheduler, LIFECYCLE)
        assert lines is not None
        assert judged(lines, None, True, taken) == judged(lines, None, False, Counter())
    assert taken["steps"] > 0


KV_BACK = cleanstep_v1._kv_back


def kv_not_compared(shadow: Any, engine: Any, item: Any, clean: Any, ready: Any) -> bool:
    """`_kv_back` without its comparison of free KV (the rids in "finished" still checked)."""
    KV_BACK(shadow, engine, item, clean, ready)
    return len(set(item.finished)) == len(item.finished) and all(r in engine._reservations for r in item.finished)


@pytest.mark.parametrize(("skipped", "sabotage", "rules"), [
    ("_policy", lambda *args: True, ("FCFS", "PARTIAL-NEXT", "WORK-CONSERVING")),
    ("_kv_back", kv_not_compared, ("KV",)),
])
def test_a_shortcut_that_skips_a_rule_is_caught(monkeypatch: pytest.MonkeyPatch, skipped: str, sabotage: Any,
                                                rules: tuple[str, ...]) -> None:
    monkeypatch.setattr(cleanstep_v1, skipped, sabotage)
    caught = []
    for rule in rules:
        traces = fault_traces(rule) if rule != "KV" else (lines for aim, lines in edited_traces(30) if aim == rule)
        caught += [found for lines in traces for found in differences(lines, rule)[0]]
    assert caught, f"a shortcut skipping {skipped} gave the monitor's verdicts on every trace"
