"""The v1 checker's shortcut for a step line that repeats the last one but for its number (`repeats`,
`tracecheck.judge_lines`, `cleanstep_v1.Shortcut.again`) never changes a verdict: on the reference's dense
trace, six faults' traces and seeded mutations of them (`test_cleanstep.mutate`), as written (json.dumps'
spaced lines) and compact as bytes, and on edits aimed at the shortcut (a repeat where a request is due its
last token, a repeated add, a line longer than the last but ending alike, a line written twice with its own
number), the verdict is the monitor's alone, message for message. The shortcut takes the repeated lines of a
run of decodes, and with each of its checks planted out it is caught."""

from __future__ import annotations

import functools
import inspect
import json
import random
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from test_cleanstep import mutate
from test_conformance_trace import live_violation

from stallfree.conformance.trace import cleanstep_v1, repeats, tracecheck
from stallfree.conformance.trace.record import record_trace
from stallfree.conformance.trace.tracefile import TraceError
from stallfree.reference import Scheduler

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
from check_trace_throughput import dense_workload

MUTANTS = 60  # seeded mutations of each base trace
HEADER = '{"stallfree_trace": 1, "config": {"token_budget": 8, "max_seqs": 1, "kv_tokens": 64}}'


def dense() -> list[str]:
    import io

    out = io.StringIO()
    record_trace(dense_workload(300), Scheduler, out)
    return out.getvalue().splitlines()


def compact(lines: list[str]) -> list[bytes]:
    """The same trace as an engine writes it: compact JSON, as bytes with their newlines."""
    return [json.dumps(json.loads(line), separators=(",", ":")).encode() + b"\n" for line in lines]


def spaced(lines: list[str]) -> list[str]:
    """The same trace as json.dumps writes it by default."""
    return [json.dumps(json.loads(line)) for line in lines]


def due_repeated(lines: list[str]) -> list[str]:
    """The dense trace with a step at which a request emits its last token replaced by the decode line
    before it, under its own number: the request decodes past its last token (a repeat the shortcut must
    not take)."""
    at = next(i for i, line in enumerate(lines) if i > 2 and json.loads(line).get("finished"))
    data = json.loads(lines[at - 1])
    data["step"] = json.loads(lines[at])["step"]
    return [*lines[:at], json.dumps(data, separators=(",", ":")), *lines[at + 1:]]


def add_repeated() -> list[str]:
    """A decode step with an add (the request waits: S is 1), then the same line again: the add twice."""
    first = '{"step": 0, "add": [[0, 4, 9]], "plan": [[0, 4]], "emitted": [0], "finished": []}'
    line = '"add": [[1, 4, 9]], "plan": [[0, 1]], "emitted": [0], "finished": []}'
    return [HEADER, first, '{"step": 1, ' + line, '{"step": 2, ' + line, '{"end": true}']


def add_moved() -> list[str]:
    """A decode line, then a line ending as it does with an add before the plan (longer than the last)."""
    rest = '"plan": [[0, 1]], "emitted": [0], "finished": []}'
    return [HEADER, '{"step": 0, "add": [[0, 4, 9]], "plan": [[0, 4]], "emitted": [0], "finished": []}',
            '{"step": 1, ' + rest, '{"step": 2, "add": [[1, 4, 9]], ' + rest, '{"end": true}']


def twice(lines: list[str]) -> list[str]:
    """A decode line written twice with the same step number."""
    at = next(i for i, line in enumerate(lines) if i > 2 and "add" not in line)
    return [*lines[:at + 1], lines[at], *lines[at + 1:]]


@functools.cache
def cases() -> list[list[str] | list[bytes]]:
    rng = random.Random(29)
    bases = {"dense": dense()}
    for rule in ("FCFS", "BUDGET", "PARTIAL-NEXT", "WORK-CONSERVING", "DECODE-FIRST", "TOKENS"):
        bases[rule] = [line.decode() if isinstance(line, bytes) else line for line in live_violation(rule)[2]]
    out: list[list[str] | list[bytes]] = []
    for lines in bases.values():
        for case in [lines, *(mutate(lines, rng) for _ in range(MUTANTS))]:
            out += [spaced(case), compact(case)]
    aimed = [due_repeated(dense()), add_repeated(), add_moved(), twice(dense())]
    return out + [form for case in aimed for form in (case, compact(case))]


def verdict_of(lines: list[str] | list[bytes], check: Any = None) -> object:
    """Everything a verdict says (or the format error), the clock left out."""
    try:
        v = (check or tracecheck.check_trace)(lines)
    except TraceError as error:
        return ("TraceError", str(error))
    found = None if v.violation is None else (v.violation.rule, v.violation.step, v.violation.message,
                                              v.violation_line)
    return found, v.steps, v.lines, v.ended


@functools.cache
def monitor_verdicts() -> list[object]:
    """The verdict of each case with every step judged by the monitor alone (no shortcut, so no repeat)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tracecheck, "usable", lambda monitor: False)
        return [verdict_of(case) for case in cases()]


def test_repeated_lines_are_taken_as_the_step_again(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = []
    again = cleanstep_v1.Shortcut.again
    monkeypatch.setattr(cleanstep_v1.Shortcut, "again", lambda self: taken.append(again(self)) or taken[-1])
    for lines in (spaced(dense()), compact(dense())):
        taken.clear()
        verdict = tracecheck.check_trace(lines)
        assert verdict.ok and verdict.steps == len(lines) - 2
        assert sum(taken) > 0.3 * verdict.steps, (sum(taken), verdict.steps)  # one decode line in three repeats


def test_the_repeat_shortcut_never_changes_a_verdict() -> None:
    differ = [(case[:3], got, expected) for case, expected in zip(cases(), monitor_verdicts(), strict=True)
              if (got := verdict_of(case)) != expected]
    assert not differ, differ[:3]
    broken = {v[0][0] for v in monitor_verdicts() if v[0] is not None and v[0] != "TraceError"}  # type: ignore[index]
    assert {"TOKENS", "KV", "PROTOCOL", "FCFS", "BUDGET", "WORK-CONSERVING"} <= broken, broken


def test_the_aimed_edits_are_breaks() -> None:
    assert verdict_of(due_repeated(dense()))[0] is not None  # type: ignore[index]
    assert verdict_of(add_repeated())[0][0] == "NEVER-FIT"  # type: ignore[index]  # rid 1 is taken
    assert verdict_of(add_moved())[0][0] == "PROGRESS"  # type: ignore[index]  # request 1 never runs
    got = verdict_of(twice(dense()))
    assert got[0] == "TraceError" and "step must be" in got[1], got  # type: ignore[index]


# Each a check of the shortcut's condition in `tracecheck.judge_lines`, planted out of it (its text, and what
# replaces it).
PLANTED = [
    ("and len(text) == len(head := form % expected) + len(rest) and text.startswith(head):",
     "and text.startswith(head := form % expected):"),  # a longer line ending alike (an add before the plan)
    ("and len(text) == len(head := form % expected) + len(rest) and text.startswith(head):",
     "and len(text) == len(head := form % expected) + len(rest):"),  # the step number
    ("elif shortcut.repeatable is item and not (item.add or item.refuse or item.cancel) and item.budget is None:",
     "elif shortcut.repeatable is item:"),  # a repeated add
]


def planted_check(monkeypatch: pytest.MonkeyPatch, text: str, by: str) -> Any:
    source = inspect.getsource(tracecheck)
    assert source.count(text) == 1, text
    module = types.ModuleType("planted")
    module.__package__ = tracecheck.__package__
    monkeypatch.setitem(sys.modules, "planted", module)  # its dataclasses look their module up
    exec(compile(source.replace(text, by), "planted", "exec"), module.__dict__)
    return module.check_trace


def caught(check: Any = None) -> int:
    return sum(verdict_of(case, check) != verdict for case, verdict in zip(cases(), monitor_verdicts(), strict=True))


@pytest.mark.parametrize(("text", "by"), PLANTED)
def test_a_reader_without_one_of_its_checks_is_caught(monkeypatch: pytest.MonkeyPatch, text: str, by: str) -> None:
    monitor_verdicts()  # before the plant
    assert caught(planted_check(monkeypatch, text, by)) > 0


def test_a_repeat_taken_when_a_request_is_due_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Shortcut.again` without its test of the calendar: a request decodes past its last token unseen."""
    monitor_verdicts()

    def again(self: cleanstep_v1.Shortcut) -> bool:
        self.take_decodes()
        return True

    monkeypatch.setattr(cleanstep_v1.Shortcut, "again", again)
    assert caught() > 0


def test_a_repeat_read_whole_gives_the_same_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repeats, "after_head", lambda text, step: None)
    assert caught() == 0
