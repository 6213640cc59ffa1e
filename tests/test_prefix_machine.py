"""The prefix state machine: the prefix-caching scheduler keeps every prefix rule and invariant through
adds that share prefixes, stops, cancels and drains, and the runs hit, evict and share blocks; each
prefix fault is found by it, its rule named."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from stallfree.prefix import Scheduler
from stallfree.prefix.faults import PREFIX_FAULTS
from stallfree.spec import RuleViolation
from stallfree.testing.prefix_machine import prefix_machine_for

FAST = settings(max_examples=60, stateful_step_count=40, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
FIND = settings(FAST, report_multiple_bugs=False, database=None, phases=[Phase.explicit, Phase.generate])


def test_the_prefix_scheduler_keeps_every_rule_and_the_machine_hits_evicts_and_shares() -> None:
    seen: list[tuple[int, int, int]] = []

    class Counting(prefix_machine_for(Scheduler)):  # type: ignore[misc, valid-type]
        def teardown(self) -> None:
            if self.monitor is not None:
                s = self.monitor.scheduler
                seen.append((s.num_hits, s.num_evictions, s.num_preemptions))

    run_state_machine_as_test(Counting, settings=FAST)
    hits, evictions, preemptions = (sum(x) for x in zip(*seen, strict=True))
    assert hits > 20 and evictions > 0 and preemptions > 0, (hits, evictions, preemptions)


@pytest.mark.parametrize("fault", PREFIX_FAULTS, ids=lambda f: f.breaks)
def test_the_machine_finds_each_prefix_fault_under_its_rule(fault: type) -> None:
    machine = prefix_machine_for(fault, fixed_pool=True)
    with pytest.raises(RuleViolation) as found:
        run_state_machine_as_test(machine, settings=settings(FIND, max_examples=200))
    assert found.value.rule == fault.breaks, str(found.value)
