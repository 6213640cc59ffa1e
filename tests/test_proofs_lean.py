"""The lean safety check (proofs/explicit/lean.py): a visited set of 64-bit fingerprints, 8 bytes a
slot, no graph; the same states and transitions as the full check, and a rule broken anywhere found,
its counterexample replayed."""

from __future__ import annotations

import pytest

from stallfree.faults.catalog import FAULTS
from stallfree.proofs.explicit import lean, modelcheck
from stallfree.proofs.explicit.bounds import Bounds


def test_the_lean_check_explores_what_the_full_one_does() -> None:
    bounds = Bounds.parse("2,3,8,3,3,3")
    thin, full = lean.check(bounds), modelcheck.check(bounds, compact=True)
    assert (thin.states, thin.transitions, thin.depth, thin.complete) == (full.states, full.transitions, full.depth,
                                                                         True)
    assert thin.counterexample is None and 8 <= thin.visited_bytes / thin.states <= 64


@pytest.mark.parametrize("rule", ["BUDGET", "KV", "FIRST-TOKEN", "FCFS", "PARTIAL-NEXT"])
def test_the_lean_check_finds_a_broken_rule(rule: str) -> None:
    """Each fault's counterexample, on the same breadth-first path as the full check's, replayed."""
    bounds = Bounds.parse("2,2,6,3,3,2")
    ce, full = lean.check(bounds, FAULTS[rule]).counterexample, modelcheck.check(bounds, FAULTS[rule]).counterexample
    assert ce is not None and full is not None and ce.rule == full.rule == rule
    assert ce.replayed is not None and rule in ce.replayed


def test_the_fingerprint_table_keeps_each_once_and_grows() -> None:
    seen = lean.FingerprintSet(capacity=4)
    assert [seen.add(h) for h in (5, 0, 5, -3, 1 << 70 | 9)] == [True, True, False, True, True]
    assert seen.add(1) is False  # 0 is stored as 1: one fingerprint
    for h in range(100):
        seen.add(h * 7919)
    assert len(seen.table) >= 2 * seen.num and not seen.add(7919 * 42)


def test_a_stall_by_a_hidden_counter_is_found_once_declared() -> None:
    """PeriodicStall stalls by its own step counter: with no revisit comparison, the lean check merges
    its states and misses it undeclared; declared, PROGRESS is broken."""
    from stallfree.proofs.controls import hidden_for

    bounds = Bounds.parse("2,2,6,3,3,2")
    assert lean.check(bounds, FAULTS["PROGRESS"]).counterexample is None
    ce = lean.check(bounds, FAULTS["PROGRESS"], hidden=hidden_for("PROGRESS")).counterexample
    assert ce is not None and ce.rule == "PROGRESS"


def test_workers_find_the_same_states_and_counterexamples() -> None:
    bounds = Bounds.parse("2,3,8,3,3,3")
    one, two = lean.check(bounds), lean.check(bounds, workers=2)
    assert (one.states, one.transitions, one.depth) == (two.states, two.transitions, two.depth)
    ce = lean.check(Bounds.parse("2,2,6,3,3,2"), FAULTS["FCFS"], workers=2).counterexample
    assert ce is not None and ce.rule == "FCFS" and ce.replayed is not None


def test_the_paged_design_runs_lean_with_its_counts() -> None:
    """The paged design's states, transitions and what it counts (preempting states) are the full
    check's."""
    from stallfree.paged import small_blocks
    from stallfree.proofs.explicit import paged

    bounds = Bounds.parse("2,2,6,3,3,3")
    design = paged.Paged(bounds, 1)
    thin, full = lean.check(bounds, small_blocks, design=design), paged.check(bounds, small_blocks)
    assert (thin.states, thin.transitions) == (full.states, full.transitions)
    assert design.preempting_states == full.preempting_states > 0
