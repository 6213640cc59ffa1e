"""The paged state machine: the paged scheduler keeps every paged rule and invariant through adds,
stops, cancels (pending ones too) and drains; each paged fault is found by it, its rule named."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from stallfree.faults.paged import PAGED_FAULTS
from stallfree.paged import Scheduler
from stallfree.spec import RuleViolation
from stallfree.testing.paged_machine import paged_machine_for

FAST = settings(max_examples=50, stateful_step_count=25, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))

# To find a fault: no shrinking, no example database (the same run everywhere).
FIND = settings(FAST, report_multiple_bugs=False, database=None, phases=[Phase.explicit, Phase.generate])

TestPagedScheduler = paged_machine_for(Scheduler).TestCase
TestPagedScheduler.settings = FAST


@pytest.mark.deep
@pytest.mark.parametrize("fault", PAGED_FAULTS, ids=lambda f: f.breaks)
def test_the_machine_finds_each_paged_fault_under_its_rule(fault: type) -> None:
    machine = paged_machine_for(fault, fixed_pool=True)
    with pytest.raises(RuleViolation) as found:
        run_state_machine_as_test(machine, settings=settings(FIND, max_examples=200))
    assert found.value.rule == fault.breaks, str(found.value)


def test_the_machine_is_not_vacuous_it_finds_a_late_finish_quickly() -> None:
    """Negative control in the default run: OverRun (one token too many) is found within 100 examples."""
    (over_run,) = [f for f in PAGED_FAULTS if f.breaks == "TOKENS-KEPT"]
    with pytest.raises(RuleViolation) as found:
        run_state_machine_as_test(paged_machine_for(over_run, fixed_pool=True),
                                  settings=FIND)
    assert found.value.rule == "TOKENS-KEPT"
