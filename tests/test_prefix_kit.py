"""The conformance kit's `prefix` profile: the prefix-caching scheduler, driven through stops, cancels
and requests that share a system prompt under the prefix monitor, keeps every prefix rule; each prefix
fault fails through it with its rule named (CountRevivedTwice excepted: its mistake needs a free cached
block revived beside a running request on a tight watermark, which the kit's 5 examples a config do not
reach; the monitor sessions and the state machine find it)."""

from __future__ import annotations

import pytest

from stallfree.conformance.kit import FAIL, PASS, conform
from stallfree.prefix import faults
from stallfree.prefix.contract.rules import PREFIX_BY_ID, PREFIX_RULE_IDS
from stallfree.prefix.faults import PREFIX_FAULTS

EXAMPLES = 5
BUDGET = 4


def test_the_prefix_scheduler_keeps_every_prefix_rule_through_the_kit() -> None:
    report = conform("stallfree.prefix.faults:small", profile="prefix", examples=EXAMPLES, budget=BUDGET)
    assert report.capabilities == frozenset({"stop", "cancel"}) and not report.skipped
    assert tuple(report.verdicts) == PREFIX_RULE_IDS
    assert report.ok and all(v == PASS for v in report.verdicts.values()), report.verdicts


SLOW = {"HitOneShort", "FreeShared", "WriteShared"}  # 12 to 34 s each, over 100 s on a loaded machine: --deep


@pytest.mark.parametrize("fault", [pytest.param(f.__name__, marks=[pytest.mark.deep] if f.__name__ in SLOW else [])
                                   for f in PREFIX_FAULTS if f is not faults.CountRevivedTwice])
def test_the_kit_names_each_prefix_faults_rule(fault: str) -> None:
    breaks = getattr(faults, fault).breaks
    report = conform(f"stallfree.prefix.faults:{fault}", profile="prefix", examples=EXAMPLES, budget=BUDGET)
    assert report.verdicts[breaks] == FAIL, report.verdicts
    assert report.counterexamples[breaks].requires == PREFIX_BY_ID[breaks].statement
