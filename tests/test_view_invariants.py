"""`trace --invariants`: the safety rules' quantities per step, equal to the facts the monitor saw,
and a broken bound marked where a scheduler breaks it."""

from __future__ import annotations

import pytest

from stallfree.commands.trace import HAND_TRACE
from stallfree.faults import FAULTS
from stallfree.main import main
from stallfree.reference import Scheduler
from stallfree.view import record
from stallfree.view.invariants import rows


def test_hand_trace_quantities() -> None:
    table = rows(record(HAND_TRACE, Scheduler))
    assert table[1].split()[:10] == ["0", "8", "<=", "8", "1", "<=", "4", "14", "<=", "64"]
    assert "r1 14-20/20" in table[4] and table[4].split()[-4:] == ["r0", "4/6", "r1", "1/3"]
    assert table[-1].endswith("r0 6/6 r1 3/3")  # every token out
    assert "!" not in "".join(table)


def test_a_broken_bound_is_marked() -> None:
    table = rows(record(HAND_TRACE, FAULTS["BUDGET"], rules=["SLOTS"]))
    assert "9 > 8 !" in table[2] and "!" not in table[1]


def test_trace_prints_them_after_the_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "--example", "hand", "--invariants"]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index("the safety rules' quantities, step by step (the verdicts above are the monitor's):")
    assert out[at - 2].startswith("WORK-CONSERVING") and len(out) - at - 2 == 6
