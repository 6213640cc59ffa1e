"""The paged state machine: the paged scheduler keeps every paged rule and invariant through adds,
stops, cancels (pending ones too) and drains, and preempts; each paged fault is found by it, its rule named
(EarlyToken's a consequence of its mistake, a rule of its `also`)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from stallfree.faults.paged import PAGED_FAULTS
from stallfree.paged import Scheduler
from stallfree.spec import Reason, RuleViolation
from stallfree.testing.paged_machine import paged_machine_for

FAST = settings(max_examples=150, stateful_step_count=50, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))

# To find a fault: no shrinking, no example database (the same run everywhere).
FIND = settings(FAST, report_multiple_bugs=False, database=None, phases=[Phase.explicit, Phase.generate])



def test_the_paged_scheduler_keeps_every_paged_rule_and_the_machine_preempts() -> None:
    seen: list[tuple[int, int]] = []  # (preemptions, cancels) of each run

    class Counting(paged_machine_for(Scheduler)):  # type: ignore[misc, valid-type]
        def teardown(self) -> None:
            if self.monitor is not None:
                shadow = self.monitor.shadow
                seen.append((shadow.num_preemptions, sum(e.reason is Reason.CANCEL for e in shadow.ended.values())))

    run_state_machine_as_test(Counting, settings=FAST)
    assert sum(p for p, _ in seen) > 20, "few runs preempted: the preemption rules were hardly exercised"
    assert sum(c for _, c in seen) > 0, "no run cancelled a request"


@pytest.mark.parametrize("fault", PAGED_FAULTS, ids=lambda f: f.breaks)
def test_the_machine_finds_each_paged_fault_under_its_rule(fault: type) -> None:
    machine = paged_machine_for(fault, fixed_pool=True)
    with pytest.raises(RuleViolation) as found:
        run_state_machine_as_test(machine, settings=settings(FIND, max_examples=300))
    assert found.value.rule in (fault.breaks, *fault.also), str(found.value)  # EarlyToken: RECOMPUTE first

