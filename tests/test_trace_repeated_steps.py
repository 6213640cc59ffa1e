"""The v2 reader's shortcut for a step line that repeats the last one but for its number (`v2._v2_records`)
never changes a verdict: on the engine checker's differential cases (`test_cleanstep.cases`: the reference's
dense trace, the vLLM traces, six faults' traces and their seeded mutations, which break every rule), as
written (json.dumps' spaced lines) and compact as bytes, the verdict with the shortcut is the verdict with
every line read whole, message for message. The shortcut takes most lines of a run of decodes, and a
reader with one of its checks planted out is caught."""

from __future__ import annotations

import functools
import inspect
import json
import sys
import types

import pytest
from test_cleanstep import cases, dense, verdict_of

from stallfree.conformance.trace import enginecheck, fastread, v2


def compact(lines: list[str]) -> list[bytes]:
    """The same trace as an engine writes it: compact JSON, as bytes with their newlines."""
    return [json.dumps(json.loads(line), separators=(",", ":")).encode() + b"\n" for line in lines]


def every_form() -> list[list[str] | list[bytes]]:
    return [form for _, case in cases() for form in (case, compact(case))]


def read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """No step line is taken as a repeat: each is read whole (by this tree's reader, whatever a test put in
    its place)."""
    monkeypatch.setattr(v2, "STEP_HEADS", ((), ()))
    monkeypatch.setattr(enginecheck, "read", v2.read)


def whole(lines: list[str] | list[bytes]) -> object:
    with pytest.MonkeyPatch.context() as patch:
        read_whole(patch)
        return verdict_of(lines)  # type: ignore[arg-type]


@functools.cache
def whole_verdicts() -> list[object]:
    return [whole(form) for form in every_form()]


def twice() -> list[bytes]:
    """The compact dense trace with its second step line written twice (the same step number again)."""
    lines = compact(dense())
    return [*lines[:3], lines[2], *lines[3:]]


def test_repeated_lines_are_read_as_the_step_again(monkeypatch: pytest.MonkeyPatch) -> None:
    read = []
    parse = fastread.parse_line_v2
    monkeypatch.setattr(fastread, "parse_line_v2", lambda *args: read.append(args[0]) or parse(*args))
    for lines in (dense(), compact(dense())):
        read.clear()
        verdict = enginecheck.check_engine_trace(lines)
        assert verdict.ok and verdict.steps == len(lines) - 2
        assert len(read) < 0.75 * verdict.steps, (len(read), verdict.steps)  # one decode line in three repeats


def test_the_repeat_shortcut_never_changes_a_verdict() -> None:
    differ = [(form[:3], got, expected) for form, expected in zip(every_form(), whole_verdicts(), strict=True)
              if (got := verdict_of(form)) != expected]  # type: ignore[arg-type]
    assert not differ, differ[:3]


def test_a_line_repeated_with_its_own_number_is_still_an_error() -> None:
    got = verdict_of(twice())  # type: ignore[arg-type]
    assert got == whole(twice())
    assert got[0] == "TraceError" and "step must be 2" in got[1], got  # type: ignore[index]


# Each a check of the shortcut's condition, planted out of it (its text, and what replaces it).
PLANTED = [
    ("and len(text) == len(head) + len(rest):", "and True:"),  # a longer line ending the same (an add moved to it)
    ("and text.startswith(head := form % expected)", "and (head := form % expected) is not None"),  # the number
]


@pytest.mark.parametrize(("text", "by"), PLANTED)
def test_a_shortcut_without_one_of_its_checks_is_caught(monkeypatch: pytest.MonkeyPatch, text: str, by: str) -> None:
    expected = [*whole_verdicts(), whole(twice())]
    source = inspect.getsource(v2)
    assert source.count(text) == 1
    module = types.ModuleType("planted")
    module.__package__ = v2.__package__
    monkeypatch.setitem(sys.modules, "planted", module)  # its dataclasses look their module up
    exec(compile(source.replace(text, by), "planted", "exec"), module.__dict__)
    module.EngineStep, module.EngineEnd = v2.EngineStep, v2.EngineEnd  # the classes fastread makes records of
    monkeypatch.setattr(enginecheck, "read", module.read)
    caught = sum(verdict_of(form) != verdict  # type: ignore[arg-type]
                 for form, verdict in zip([*every_form(), twice()], expected, strict=True))
    assert caught > 0
