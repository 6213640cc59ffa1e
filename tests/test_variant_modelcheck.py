"""The variants' model checks (proofs.explicit.variants): each variant keeps its contract in every
reachable state of small bounds, with set_budget and priorities as environment actions, and with
stops and cancels too; each negative control is caught breaking the rule it names, its counterexample
replayed by `play` (a stop that must be refused has no workload form: its message says it)."""

from __future__ import annotations

import pytest

from stallfree.conformance.kit.check import CAPABILITY_TESTS
from stallfree.faults.aligned import ALIGNED_FAULTS
from stallfree.faults.budget import BUDGET_FAULTS
from stallfree.faults.priority import NoAging
from stallfree.faults.static import STATIC_FAULTS
from stallfree.faults.variant_lifecycle import VARIANT_LIFECYCLE_FAULTS
from stallfree.proofs import variant_rows
from stallfree.proofs.controls import wrong_lifecycle_state
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.variants import VariantBounds, check
from stallfree.spec.capability import CANCEL, STOP
from stallfree.spec.contract import Contract
from stallfree.spec.variants.aligned import contract as aligned
from stallfree.spec.variants.budget_change import ROTATION_CONTRACT
from stallfree.spec.variants.priority import contract as aging
from stallfree.spec.variants.static import STATIC_CONTRACT
from stallfree.spec.verdict import Verdict
from stallfree.variants.aligned import Aligned, BatchedAligned
from stallfree.variants.priority import BatchedPrioritized, Prioritized
from stallfree.variants.rotating import BatchedRotating, Rotating
from stallfree.variants.static import StaticBatching

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


LIFECYCLE_CASES = {name: (case, factory) for case in variant_rows.cases() if case.lifecycle is not None
                   for name, factory in case.variants}


@pytest.mark.parametrize("name", sorted(LIFECYCLE_CASES))
def test_model_check_variant_keeps_its_contract_with_stops_and_cancels(name: str) -> None:
    """CANCEL, TOKENS' stop clause, KV's return and the contract's other rules in every state reached
    with stops of any emitted token and cancels between steps and while a plan is pending."""
    case, factory = LIFECYCLE_CASES[name]
    result = check(case.contract, case.lifecycle, factory)
    assert result.holds and result.states > 500, (result.rule, result.message)


@pytest.mark.parametrize("fault", [f for faults in VARIANT_LIFECYCLE_FAULTS.values() for f in faults],
                         ids=lambda f: f"{f.breaks}-{f.__name__}")
def test_model_check_catches_lifecycle_fault_on_the_variant(fault: type) -> None:
    variant = next(name for name, faults in VARIANT_LIFECYCLE_FAULTS.items() if fault in faults)
    case, _ = LIFECYCLE_CASES[variant]
    result = check(case.contract, case.lifecycle, case.wrap(fault), rules=(fault.breaks,),
                   hidden=wrong_lifecycle_state)
    assert variant_rows.lifecycle_caught(result, fault.breaks), (result.rule, result.message, result.replayed)


def test_model_check_without_the_hidden_line_misses_a_reordered_line() -> None:
    """Why the faults' own state is in the key: merged with the correct line's state, a line a cancel
    reordered is never stepped (the check then finds nothing to catch)."""
    case, _ = LIFECYCLE_CASES["Rotating"]
    fault = next(f for f in VARIANT_LIFECYCLE_FAULTS["Rotating"] if f.breaks == "FCFS")
    assert check(case.contract, case.lifecycle, fault, rules=("FCFS",)).rule is None


@pytest.mark.deep
def test_prove_variant_rows_all_hold_or_are_caught() -> None:
    rows = variant_rows.rows(lambda *a: a, lambda line: None, deep=True)
    assert all(r[3] is Verdict.HOLDS for r in rows), [r for r in rows if r[3] is not Verdict.HOLDS]


@pytest.mark.parametrize("index", range(8))
def test_z3_variant_arithmetic_holds_and_its_controls_are_refuted(index: int) -> None:
    from stallfree.proofs.smt.variants import CLAIMS, decide

    rule, name, claim, must_hold = CLAIMS[index]
    assert decide(name, claim).verdict is (Verdict.HOLDS if must_hold else Verdict.BROKEN), (rule, name)


STATIC_BOUNDS = VariantBounds(Bounds(3, 2, 12, 3, 6, 2))


def test_model_check_static_keeps_BATCH_CLOSED_and_BATCH_CONSERVING() -> None:
    result = check(STATIC_CONTRACT, STATIC_BOUNDS, StaticBatching)
    assert result.holds and result.states > 1000 and result.drain_bound is not None


@pytest.mark.parametrize("rule", sorted(STATIC_FAULTS))
def test_model_check_catches_static_fault(rule: str) -> None:
    result = check(STATIC_CONTRACT, STATIC_BOUNDS, STATIC_FAULTS[rule], rules=(rule,))
    assert result.rule == rule and result.replayed is not None and result.replayed.startswith(rule)


def widened(contract: Contract, rules: tuple[str, ...]) -> set[str]:
    return {dict(contract.widens).get(rule, rule) for rule in rules}


@pytest.mark.parametrize("name", sorted(LIFECYCLE_CASES))
def test_every_rule_that_judges_an_end_has_a_lifecycle_fault_on_the_variant(name: str) -> None:
    """The rules the kit's stop and cancel tests judge (`CAPABILITY_TESTS`), as the variant's contract
    names them, are exactly the rules its lifecycle faults break: none is left without a control."""
    case, _ = LIFECYCLE_CASES[name]
    judged = widened(case.contract, (*CAPABILITY_TESTS[STOP][1], *CAPABILITY_TESTS[CANCEL][1]))
    assert {f.breaks for f in VARIANT_LIFECYCLE_FAULTS[name]} == judged


@pytest.mark.parametrize("fault", [f for faults in VARIANT_LIFECYCLE_FAULTS.values() for f in faults],
                         ids=lambda f: f"{f.breaks}-{f.__name__}")
def test_the_variant_row_is_BROKEN_with_a_counterexample_on_a_scheduler_that_mishandles_an_end(fault: type) -> None:
    """`prove --methods variants`' row for a variant, every rule of its contract judged with stops and
    cancels, reads BROKEN when the variant's scheduler mishandles an end, naming the rule the fault
    breaks and the counterexample's workload."""
    variant = next(name for name, faults in VARIANT_LIFECYCLE_FAULTS.items() if fault in faults)
    case, _ = LIFECYCLE_CASES[variant]
    claim, method, bound, verdict, _, detail = variant_rows.model_row(
        lambda *row: row, case.contract, case.lifecycle, fault.__name__, case.wrap(fault), hidden=wrong_lifecycle_state)
    assert (claim, method, bound) == (case.contract.name, f"model check ({fault.__name__})", case.lifecycle.label())
    assert verdict is Verdict.BROKEN and "+stops,cancels" in bound
    assert detail.startswith(f"{fault.breaks}: ") and "; workload {" in detail, detail


GROWN = ("num_requests", "max_prompt", "max_new")  # more of these reaches every state fewer reach, and more
KEPT = ("token_budget", "max_seqs", "kv_tokens", "never_fit")  # a larger B, S or K plans differently


def test_each_deep_lifecycle_bound_contains_its_default() -> None:
    """`--profile deep` checks each variant with stops and cancels again, at a bound whose workloads
    include the default's: the same B, S, K, budgets and priorities, more requests, longer prompts or
    more tokens (so every state of the default is among its states)."""
    for case in variant_rows.cases():
        assert case.lifecycle is not None and case.deep is not None, case.contract.name
        low, high = case.lifecycle, case.deep
        assert (low.budgets, low.max_changes, low.priorities) == (high.budgets, high.max_changes, high.priorities)
        assert high.bounds.lifecycle and high != low
        assert all(getattr(high.bounds, f) == getattr(low.bounds, f) for f in KEPT), case.contract.name
        assert all(getattr(high.bounds, f) >= getattr(low.bounds, f) for f in GROWN), case.contract.name
