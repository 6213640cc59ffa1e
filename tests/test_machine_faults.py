"""Every rule check of the state machine can fail: over each deliberately wrong scheduler of
`stallfree.faults.FAULTS`, the machine finds a violation, and with only the fault's own rule checked
it finds that rule. One fault is also shrunk, to show the failure reads as a trace.

Shrinking is left out of the per-fault runs: the machine only has to find the fault, and shrinking
thirteen failures would cost minutes of CI time."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from stallfree.faults import FAULTS
from stallfree.spec import RULE_IDS, RuleViolation
from stallfree.testing.machine import machine_for

FIND = settings(
    max_examples=100, derandomize=True, deadline=None, print_blob=False, database=None,
    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
)
SHRINK = settings(FIND, phases=[Phase.explicit, Phase.generate, Phase.shrink], stateful_step_count=12)


def violation_of(machine: type, given: settings = FIND) -> RuleViolation:
    with pytest.raises(RuleViolation) as found:
        run_state_machine_as_test(machine, settings=given)
    return found.value


@pytest.mark.parametrize("rule", RULE_IDS)
def test_machine_catches_fault_with_every_rule_checked(rule: str) -> None:
    found = violation_of(machine_for(FAULTS[rule]))
    assert found.rule == rule, str(found)


@pytest.mark.parametrize("rule", RULE_IDS)
def test_machine_catches_fault_with_only_its_rule_checked(rule: str) -> None:
    found = violation_of(machine_for(FAULTS[rule], rules=[rule]))
    assert found.rule == rule, str(found)


def test_shrunk_PROGRESS_failure_reads_as_a_trace() -> None:
    found = violation_of(machine_for(FAULTS["PROGRESS"]), SHRINK)
    notes = "\n".join(getattr(found, "__notes__", []))
    assert found.rule == "PROGRESS"
    assert "config: budget" in notes and "-> accepted" in notes and "step 0: plan" in notes, notes
