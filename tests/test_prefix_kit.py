"""The conformance kit's `prefix` profile: the prefix-caching scheduler, driven through stops and
cancels under the prefix monitor, keeps every prefix rule; faults the kit's plain workloads can reach
(their hits are a preempted request's own blocks, recomputed) fail through it with their rule named.
The kit's workloads carry no shared content: the faults that need shared prompts are shown by
tests/test_prefix_faults.py, the state machine and the model check."""

from __future__ import annotations

import pytest

from stallfree.conformance.kit import FAIL, PASS, conform
from stallfree.prefix.contract.rules import PREFIX_BY_ID, PREFIX_RULE_IDS

EXAMPLES = 5
BUDGET = 4


def test_the_prefix_scheduler_keeps_every_prefix_rule_through_the_kit() -> None:
    report = conform("stallfree.prefix.faults:small", profile="prefix", examples=EXAMPLES, budget=BUDGET)
    assert report.capabilities == frozenset({"stop", "cancel"}) and not report.skipped
    assert tuple(report.verdicts) == PREFIX_RULE_IDS
    assert report.ok and all(v == PASS for v in report.verdicts.values()), report.verdicts


@pytest.mark.parametrize("fault", ["IgnoreWatermark", "FreeFirstBlockFirst", "WriteShared"])
def test_the_kit_names_a_prefix_faults_rule(fault: str) -> None:
    from stallfree.prefix import faults

    breaks = getattr(faults, fault).breaks
    report = conform(f"stallfree.prefix.faults:{fault}", profile="prefix", examples=EXAMPLES, budget=BUDGET)
    assert report.verdicts[breaks] == FAIL, report.verdicts
    assert report.counterexamples[breaks].requires == PREFIX_BY_ID[breaks].statement
