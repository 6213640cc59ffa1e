"""The negative controls of stops and cancels: each wrong scheduler of `LIFECYCLE_FAULTS` (and
CANCEL's fault in `FAULTS`) is caught by the monitor over workloads with stops and cancels, and by
the state machine's stop and cancel actions, naming the rule it breaks (TOKENS, KV, FCFS, PROGRESS,
CANCEL); the correct schedulers pass the same workloads and the same machine. A scheduler without
cancel() or the stopped argument is not judged on them: the machine leaves those actions out."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test
from test_monitor_faults import first_violation  # pytest puts tests/ on the path

from stallfree.faults import FAULTS, LIFECYCLE_FAULTS
from stallfree.reference import Scheduler
from stallfree.spec import CANCEL, STOP, Monitor, RuleViolation, Unsupported, Workload, play, supports
from stallfree.spec.types import Config
from stallfree.testing.generate import LIFECYCLE, random_workload
from stallfree.testing.machine import machine_for
from stallfree.testing.plain import Plain
from stallfree.variants import Stepwise

WORKLOADS = [random_workload(random.Random(seed), LIFECYCLE) for seed in range(60)]
FIND = settings(
    max_examples=200, derandomize=True, deadline=None, print_blob=False, database=None,
    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
)
# Caught by play() over the lifecycle workloads. StopsAnyRid needs a stop the contract refuses, which
# only the state machine offers (its bad_stop action).
BY_PLAY = [f for f in (FAULTS["CANCEL"], *LIFECYCLE_FAULTS) if f.__name__ != "StopsAnyRid"]


def test_the_lifecycle_workloads_stop_and_cancel() -> None:
    stats = [play(w, Scheduler) for w in WORKLOADS]
    assert sum(s.stopped for s in stats) > 50 and sum(s.cancelled for s in stats) > 50
    assert sum(s.cancels_refused for s in stats) > 5
    assert all(s.finished == s.accepted for s in stats)  # PROGRESS: every one ended


@pytest.mark.parametrize("factory", [Scheduler, Stepwise], ids=["reference", "stepwise"])
def test_correct_schedulers_keep_every_rule_with_stops_and_cancels(factory: type) -> None:
    for workload in WORKLOADS:
        play(workload, factory)


@pytest.mark.parametrize("fault", BY_PLAY, ids=lambda f: f"{f.breaks}-{f.__name__}")
def test_monitor_catches_the_lifecycle_fault_naming_its_rule(fault: type) -> None:
    for rules in (None, [fault.breaks]):
        found = first_violation(fault, rules, WORKLOADS)
        assert found is not None, f"no workload exposed {fault.__name__}"
        violation, workload = found
        if rules is None and fault.breaks == "PROGRESS":  # a blocked line may leave budget unused first
            assert violation.rule in ("PROGRESS", "WORK-CONSERVING"), str(violation)
            continue
        assert violation.rule == fault.breaks, str(violation)
        with pytest.raises(RuleViolation) as again:  # the counterexample replays from its JSON
            play(Workload.loads(workload.dumps()), fault, rules)
        assert (again.value.rule, again.value.step) == (violation.rule, violation.step)


@pytest.mark.parametrize("fault", [FAULTS["CANCEL"], *LIFECYCLE_FAULTS], ids=lambda f: f"{f.breaks}-{f.__name__}")
def test_state_machine_catches_the_lifecycle_fault_with_only_its_rule_checked(fault: type) -> None:
    with pytest.raises(RuleViolation) as found:
        run_state_machine_as_test(machine_for(fault, rules=[fault.breaks]), settings=FIND)
    assert found.value.rule == fault.breaks, str(found.value)


def test_TOKENS_a_stop_the_contract_refuses_must_be_refused() -> None:
    m = Monitor(Stepwise(8, 2, 64), Config(8, 2, 64))  # refuses it
    m.add(0, 20, 4)
    m.plan()  # a chunk of 8 of 20: emits nothing
    m.refuse_stop([0])
    m.complete()
    bad = next(f for f in LIFECYCLE_FAULTS if f.__name__ == "StopsAnyRid")
    m = Monitor(bad(8, 2, 64), Config(8, 2, 64))
    m.add(0, 20, 4)
    m.plan()
    with pytest.raises(RuleViolation, match=r"^TOKENS at step 0: complete\(plan, stopped=\[0\]\) was accepted but "
                                            r"must be refused: rid 0 emits no token in step 0$"):
        m.refuse_stop([0])


def test_CANCEL_refused_and_accepted_cancels_are_judged() -> None:
    m = Monitor(Scheduler(8, 2, 64), Config(8, 2, 64))
    m.add(0, 4, 4)
    assert m.cancel(3) is False and m.cancel(0) is True and m.cancel(0) is False
    bad = next(f for f in LIFECYCLE_FAULTS if f.__name__ == "CancelAnything")
    m = Monitor(bad(8, 2, 64), Config(8, 2, 64))
    with pytest.raises(RuleViolation, match=r"^CANCEL at step 0: cancel\(3\) was accepted but must be refused: "
                                            r"rid 3 was never added$"):
        m.cancel(3)


def test_a_plain_protocol_scheduler_supports_neither_and_is_not_judged_on_them() -> None:
    assert supports(Scheduler(8, 2, 64)) == {STOP, CANCEL} and supports(Plain(8, 2, 64)) == frozenset()
    m = Monitor(Plain(8, 2, 64), Config(8, 2, 64))
    m.add(0, 4, 4)
    with pytest.raises(Unsupported, match="Plain does not support 'cancel'"):
        m.cancel(0)
    with pytest.raises(Unsupported, match="Plain does not support 'stop'"):
        m.step(stopped=[0])
    run_state_machine_as_test(machine_for(Plain), settings=settings(FIND, max_examples=20))
