"""The variants' model checks (proofs.explicit.variants): each variant keeps its contract in every
reachable state of small bounds, with set_budget and priorities as environment actions, and each
negative control is caught breaking the rule it names, its counterexample replayed by `play`."""

from __future__ import annotations

import pytest

from stallfree.faults.aligned import ALIGNED_FAULTS
from stallfree.faults.budget import BUDGET_FAULTS
from stallfree.faults.priority import NoAging
from stallfree.proofs import variant_rows
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.variants import VariantBounds, check
from stallfree.spec.aligned import contract as aligned
from stallfree.spec.budget_change import ROTATION_CONTRACT
from stallfree.spec.priority import contract as aging
from stallfree.variants.aligned import Aligned, BatchedAligned
from stallfree.variants.priority import BatchedPrioritized, Prioritized
from stallfree.variants.rotating import BatchedRotating, Rotating

ALIGNED_BOUNDS = VariantBounds(Bounds(3, 2, 12, 3, 6, 2))
ROTATION_BOUNDS = VariantBounds(Bounds(2, 3, 9, 3, 2, 3), budgets=(0, 1, 2), max_changes=2)
AGING_BOUNDS = VariantBounds(Bounds(4, 1, 10, 3, 2, 3, never_fit=False), priorities=(-1, 0, 3))


@pytest.mark.parametrize("cls", [Aligned, BatchedAligned], ids=["stepwise", "batched"])
def test_model_check_aligned_keeps_ALIGNED_and_its_widened_rules(cls: type) -> None:
    result = check(aligned(2), ALIGNED_BOUNDS, variant_rows._aligned(cls))
    assert result.holds and result.states > 1000 and result.drain_bound is not None


@pytest.mark.parametrize("rule", sorted(ALIGNED_FAULTS))
def test_model_check_catches_aligned_fault(rule: str) -> None:
    result = check(aligned(2), ALIGNED_BOUNDS, variant_rows._aligned(ALIGNED_FAULTS[rule]), rules=(rule,))
    assert result.rule == rule and result.replayed is not None and result.replayed.startswith(rule)


@pytest.mark.parametrize("cls", [Rotating, BatchedRotating], ids=["stepwise", "batched"])
def test_model_check_rotation_keeps_DECODE_FAIR_and_DECODE_WAIT_with_budget_changes(cls: type) -> None:
    result = check(ROTATION_CONTRACT, ROTATION_BOUNDS, cls)
    assert result.holds and result.states > 1000


@pytest.mark.parametrize("rule", sorted(BUDGET_FAULTS))
def test_model_check_catches_budget_fault(rule: str) -> None:
    result = check(ROTATION_CONTRACT, ROTATION_BOUNDS, BUDGET_FAULTS[rule], rules=(rule,))
    assert result.rule == rule and result.replayed is not None and result.replayed.startswith(rule)


@pytest.mark.parametrize("cls", [Prioritized, BatchedPrioritized], ids=["stepwise", "batched"])
def test_model_check_aging_keeps_AGING_BOUND_and_PRIORITY_ORDER(cls: type) -> None:
    result = check(aging(1), AGING_BOUNDS, variant_rows._aged(cls))
    assert result.holds and result.states > 1000


def test_model_check_AGING_BOUND_catches_strict_priority() -> None:
    result = check(aging(1), AGING_BOUNDS, NoAging, rules=("AGING-BOUND",))
    assert result.rule == "AGING-BOUND" and result.replayed is not None


@pytest.mark.deep
def test_prove_variant_rows_all_hold_or_are_caught() -> None:
    rows = variant_rows.rows(lambda *a: a, "holds", "BROKEN", "caught", lambda line: None)
    assert all(r[3] in ("holds", "caught") for r in rows), [r for r in rows if r[3] == "BROKEN"]


@pytest.mark.parametrize("index", range(8))
def test_z3_variant_arithmetic_holds_and_its_controls_are_refuted(index: int) -> None:
    from stallfree.proofs.smt.variants import CLAIMS, decide

    rule, name, claim, must_hold = CLAIMS[index]
    assert decide(name, claim).result == ("holds" if must_hold else "counterexample"), (rule, name)
