"""Block-aligned chunks (stallfree.spec.variants.aligned): the variant keeps its contract, each rule it adds
or widens catches its fault, and the unused-budget bound b - 1 is exact."""

from __future__ import annotations

import random

import pytest

from stallfree.faults.aligned import ALIGNED_FAULTS
from stallfree.spec import Arrival, Config, InvalidField, RuleViolation, Workload, play
from stallfree.spec.variants.aligned import aligned_chunk, contract
from stallfree.testing.generate import random_workload
from stallfree.variants.aligned import Aligned
from stallfree.variants.stepwise import Stepwise

WORKLOADS = [random_workload(random.Random(seed)) for seed in range(120)]


def block_for(workload: Workload, seed: int) -> int:
    return min((2, 4, 16)[seed % 3], workload.config.token_budget)


def make(cls: type, block_size: int):  # type: ignore[no-untyped-def]
    if not issubclass(cls, Aligned):  # a policy that knows no blocks
        return cls
    return lambda **config: cls(**config, block_size=block_size)


def first_violation(cls: type, rules: list[str] | None = None) -> RuleViolation | None:
    for seed, workload in enumerate(WORKLOADS):
        b = block_for(workload, seed)
        try:
            play(workload, make(cls, b), rules, contract=contract(b))
        except RuleViolation as violation:
            return violation
    return None


def test_aligned_keeps_every_rule_of_its_contract() -> None:
    assert first_violation(Aligned) is None


@pytest.mark.parametrize("rule", sorted(ALIGNED_FAULTS))
def test_aligned_rule_catches_its_fault(rule: str) -> None:
    violation = first_violation(ALIGNED_FAULTS[rule])
    assert violation is not None and violation.rule == rule, violation


@pytest.mark.parametrize("rule", sorted(ALIGNED_FAULTS))
def test_aligned_rule_catches_its_fault_checked_alone(rule: str) -> None:
    violation = first_violation(ALIGNED_FAULTS[rule], [rule])
    assert violation is not None and violation.rule == rule


def test_ALIGNED_breaks_on_the_unaligned_policy() -> None:
    # The contract's own policy (min(remaining, left) chunks) is not aligned: ALIGNED fails on it.
    violation = first_violation(Stepwise)
    assert violation is not None and violation.rule == "ALIGNED"


def test_ALIGNED_PARTIAL_NEXT_breaks_on_the_unaligned_policy_checked_alone() -> None:
    violation = first_violation(Stepwise, ["ALIGNED-PARTIAL-NEXT"])
    assert violation is not None and violation.rule == "ALIGNED-PARTIAL-NEXT"


def test_ALIGNED_WORK_CONSERVING_bound_is_b_minus_1_and_reached() -> None:
    # Budget 2b + (b - 1) and one long prompt: each non-final chunk is 2b, and b - 1 tokens stay unused.
    b = 16
    budget = 2 * b + b - 1
    workload = Workload(Config(budget, 2, 1000), (Arrival(0, 200, 2, 0),))
    unused: list[int] = []

    def on_step(monitor, facts) -> None:  # type: ignore[no-untyped-def]
        if facts.prefills and not facts.prefills[0].completes:
            unused.append(budget - facts.num_tokens)

    play(workload, make(Aligned, b), contract=contract(b), on_step=on_step)
    assert unused and max(unused) == b - 1


def test_aligned_chunk_is_whole_blocks_unless_it_finishes() -> None:
    for remaining in range(1, 40):
        for left in range(0, 40):
            n = aligned_chunk(remaining, left, 8)
            assert n == remaining if remaining <= left else (n % 8 == 0 and left - 8 < n <= left)


def test_aligned_refuses_a_budget_below_its_block_size() -> None:
    with pytest.raises(InvalidField, match="block_size 16 exceeds token_budget 8"):
        Aligned(8, 2, 100, block_size=16)
    with pytest.raises(TypeError, match="block_size must be an int"):
        Aligned(8, 2, 100, block_size=2.0)  # type: ignore[arg-type]
