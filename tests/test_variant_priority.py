"""Priorities with aging (stallfree.spec.variants.priority): priority validated in add(), admission by effective
priority, the bounded-wait theorem AGING-BOUND, and each rule catching its fault; strict priority
starves a low-priority request under a stream of high-priority arrivals."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from violations import first_violation

from stallfree.faults.priority import PRIORITY_FAULTS, NoAging
from stallfree.spec import Arrival, Config, RuleViolation, Workload, play
from stallfree.spec.variants.priority import MAX_PRIORITY, PriorityMonitor, contract
from stallfree.testing.generate import Ranges, random_workload
from stallfree.variants.priority import Aging4, Prioritized

AGING4 = contract(4)


def with_priorities(workload: Workload, rng: random.Random) -> Workload:
    def priority() -> object:
        return rng.choice((*range(MAX_PRIORITY + 1),) * 8 + (-1, MAX_PRIORITY + 1, 1.0, True))

    return replace(workload, requests=tuple(replace(a, priority=priority()) for a in workload.requests))


WORKLOADS = [with_priorities(random_workload(random.Random(seed), Ranges(max_seqs=3)), random.Random(seed))
             for seed in range(150)]
# A low-priority request behind a long one, then a high-priority arrival every other step.
STREAM = Workload(Config(8, 1, 256), (Arrival(0, 4, 8, 0, 0), Arrival(1, 4, 2, 0, 0),
                                      *(Arrival(2 + i, 4, 2, 1 + 2 * i, 3) for i in range(40))))


def test_aging_keeps_every_rule_of_its_contract() -> None:
    assert first_violation(WORKLOADS, Aging4, AGING4) is None


def test_strict_priority_keeps_the_contract_without_aging() -> None:
    for workload in WORKLOADS[:60]:
        play(workload, NoAging, contract=contract(None))


@pytest.mark.parametrize("rule", sorted(PRIORITY_FAULTS))
def test_priority_rule_catches_its_fault(rule: str) -> None:
    fault = PRIORITY_FAULTS[rule]
    factory = type(fault.__name__ + "4", (fault,), {"aging": 4}) if fault is not NoAging else fault
    violation = first_violation(WORKLOADS, factory, AGING4, [rule])
    assert violation is not None and violation.rule == rule


def test_AGING_BOUND_breaks_on_strict_priority_under_a_stream_of_high_priority_arrivals() -> None:
    with pytest.raises(RuleViolation, match=r"rid 1 of priority 0, arrived at step 0") as caught:
        play(STREAM, NoAging, ["AGING-BOUND"], contract=AGING4)
    assert caught.value.rule == "AGING-BOUND"


def admitted_at(factory: type, rid: int) -> int:
    steps: dict[int, int] = {}
    play(STREAM, factory, contract=AGING4 if factory is Aging4 else contract(None),
         on_step=lambda m, f: steps.update({c.track.rid: f.step for c in f.admitted}))
    return steps[rid]


def test_aging_admits_the_low_priority_request_within_its_bound_and_strict_priority_starves_it() -> None:
    # With A = 4 and P = 3 it outranks every later arrival after 3 * 4 = 12 steps: admitted at step 16
    # (once the running request is done). Strict priority admits it after all 40 high-priority requests.
    assert admitted_at(Aging4, 1) == 16
    assert admitted_at(NoAging, 1) > 80


@pytest.mark.parametrize("bad", (-1, MAX_PRIORITY + 1, 1.0, True, None))
def test_NEVER_FIT_refuses_a_bad_priority_with_state_unchanged(bad: object) -> None:
    s = Prioritized(8, 2, 100)
    with pytest.raises((ValueError, TypeError), match="priority"):
        s.add(0, 4, 2, bad)  # type: ignore[arg-type]
    assert s.seqs == {} and not any(s.levels)
    s.add(0, 4, 2, 1)  # the rid is still free


def test_NEVER_FIT_a_priority_scheduler_may_refuse_the_rid_of_an_ended_request() -> None:
    """NEVER-FIT lets a scheduler refuse a rid whose request ended (it need not forget it); the priority
    monitor judges add() as the plain monitor does. Prioritized keeps its records, so it refuses."""
    config = Config(8, 2, 64)
    monitor = PriorityMonitor(Prioritized(8, 2, 64), config, None, AGING4)
    assert monitor.add(0, 2, 1, 1)
    monitor.step()  # whole prompt, its only token: ended
    assert 0 in monitor.shadow.ended
    assert monitor.add(0, 2, 1, 1) is False  # refused, and rightly so
