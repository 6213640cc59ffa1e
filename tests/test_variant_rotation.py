"""A budget changed while running (stallfree.spec.budget_change): set_budget in the protocol, the
rotating variant keeping DECODE-FAIR and its bound DECODE-WAIT, oldest-first failing both after a
budget drop, and each rule catching its fault."""

from __future__ import annotations

import random

import pytest
from violations import first_violation

from stallfree.faults.budget import BUDGET_FAULTS
from stallfree.spec import Arrival, Config, RuleViolation, Workload, play
from stallfree.spec.budget_change import BUDGET_CONTRACT, ROTATION_CONTRACT
from stallfree.spec.workload import BudgetChange
from stallfree.variants.rotating import Resizable, Rotating

BAD = (0, -3, True, 2.0, "4")


def busy_workload(rng: random.Random) -> Workload:
    """Several short prompts decoding at once, then budget drops below their number and rises again,
    with a bad value (which set_budget must refuse) now and then."""
    budget = rng.randint(2, 12)
    num = rng.randint(2, 10)
    requests = [Arrival(i, rng.randint(1, 10), rng.randint(3, 20), rng.randint(0, 12)) for i in range(num)]
    changes = [BudgetChange(rng.randint(0, 30), rng.choice((1, 1, 2, 3, rng.randint(1, budget), rng.choice(BAD))))
               for _ in range(rng.randint(1, 5))]
    kv = rng.choice((30, 100, 400))
    return Workload(Config(budget, rng.randint(2, 8), kv), tuple(requests),
                    tuple(sorted(changes, key=lambda c: c.step)))


WORKLOADS = [busy_workload(random.Random(seed)) for seed in range(150)]


DROP = Workload(Config(4, 4, 200), tuple(Arrival(i, 2, 12, 0) for i in range(4)), (BudgetChange(2, 1),))


def test_rotating_keeps_the_rotation_contract() -> None:
    assert first_violation(WORKLOADS, Rotating, ROTATION_CONTRACT) is None


def test_resizable_keeps_the_budget_change_contract() -> None:
    assert first_violation(WORKLOADS, Resizable, BUDGET_CONTRACT) is None


def test_DECODE_FAIR_breaks_on_oldest_first_after_a_budget_drop() -> None:
    with pytest.raises(RuleViolation) as caught:
        play(DROP, Resizable, contract=ROTATION_CONTRACT)
    assert caught.value.rule == "DECODE-FAIR" and caught.value.step == 3


def test_DECODE_WAIT_breaks_on_oldest_first_after_a_budget_drop() -> None:
    # Budget 1 for 3 ready streams: the bound is ceil(3/1) - 1 = 2 steps; oldest-first starves rid 1 longer.
    with pytest.raises(RuleViolation, match=r"bound is ceil\(3/1\) - 1 = 2") as caught:
        play(DROP, Resizable, ["DECODE-WAIT"], contract=ROTATION_CONTRACT)
    assert caught.value.rule == "DECODE-WAIT"


def test_DECODE_WAIT_bound_is_reached_by_rotation() -> None:
    longest: list[int] = []

    def on_step(monitor, facts) -> None:  # type: ignore[no-untyped-def]
        longest.append(max((r.steps for r in monitor.shadow.runs.values()), default=0))

    play(DROP, Rotating, contract=ROTATION_CONTRACT, on_step=on_step)
    assert max(longest) == 2


def test_DECODE_FIRST_breaks_on_rotation_after_a_budget_drop() -> None:
    # The reference's rule asks for the oldest: rotation keeps its own contract, not that one.
    with pytest.raises(RuleViolation) as caught:
        play(DROP, Rotating, contract=BUDGET_CONTRACT)
    assert caught.value.rule == "DECODE-FIRST"


@pytest.mark.parametrize("rule", sorted(BUDGET_FAULTS))
def test_budget_rule_catches_its_fault(rule: str) -> None:
    violation = first_violation(WORKLOADS, BUDGET_FAULTS[rule], ROTATION_CONTRACT, [rule])
    assert violation is not None and violation.rule == rule


@pytest.mark.parametrize("bad", BAD)
def test_BUDGET_CHANGE_refuses_a_bad_budget_with_state_unchanged(bad: object) -> None:
    s = Rotating(4, 2, 100)
    with pytest.raises((ValueError, TypeError), match="token_budget"):
        s.set_budget(bad)  # type: ignore[arg-type]
    assert s.config == Config(4, 2, 100)


def test_READY_WITHIN_BUDGET_is_no_longer_a_theorem_after_a_drop() -> None:
    from stallfree.spec import invariants

    states: list[str | None] = []
    play(DROP, Rotating, contract=ROTATION_CONTRACT,
         on_step=lambda m, f: states.append(invariants.ready_within_budget(m.shadow, invariants.shown(m.scheduler))))
    assert any(s is not None for s in states)
