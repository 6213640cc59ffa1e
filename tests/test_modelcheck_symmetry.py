"""Symmetry over ready requests: the reduced search merges states that differ only in the order of
their ready requests. It must agree with the unreduced search on every verdict, and its states must
be exactly the unreduced states' classes."""

from __future__ import annotations

import pytest

from stallfree.faults import FAULTS
from stallfree.proofs import controls
from stallfree.proofs.explicit import modelcheck
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.modelcheck import check
from stallfree.proofs.explicit.snapshot import symmetric
from stallfree.reference import Scheduler

SMALL = "3,4,12,3,3,2"  # B = 3: up to three ready requests at once, so their order can vary


def test_symmetric_states_are_the_classes_of_the_unreduced_ones() -> None:
    bounds = Bounds.parse(SMALL)
    explored = modelcheck.explore(bounds, Scheduler)
    assert explored.result.holds
    classes = {symmetric(key) for key in explored.keys}  # explore keeps whole keys
    reduced = check(bounds, symmetry=True)
    assert reduced.holds and reduced.states == len(classes) < explored.graph.num_states
    unreduced = check(bounds)
    assert (reduced.drain_bound, reduced.longest_steps) == (unreduced.drain_bound, unreduced.longest_steps)


@pytest.mark.parametrize("rule", list(FAULTS))
def test_symmetric_and_unreduced_searches_agree_on_each_fault(rule: str) -> None:
    bound, fault, hidden = controls.control_bound(rule), controls.fault(rule), controls.hidden_for(rule)
    plain, reduced = check(bound, fault, hidden, compact=True), check(bound, fault, hidden, compact=True, symmetry=True)
    assert plain.counterexample is not None and reduced.counterexample is not None
    assert reduced.counterexample.rule == plain.counterexample.rule == rule
