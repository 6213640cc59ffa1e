"""The conformance kit's `paged` profile with stops and cancels: the paged scheduler is driven through
both under the paged monitor and keeps every paged rule; each wrong paged scheduler in faults/paged.py
fails through the kit with its rule named, the lifecycle ones (a block kept after an end, a cancel
forgotten, a token too many, a cancelled request's blocks kept, a stop ignored, a token in mid-prefill)
among them."""

from __future__ import annotations

import pytest

from stallfree.conformance.kit import FAIL, PASS, conform
from stallfree.conformance.kit.report import render
from stallfree.faults.paged import PAGED_FAULTS
from stallfree.spec.paged.rules import PAGED_BY_ID, PAGED_RULE_IDS

EXAMPLES = 5
BUDGET = 4  # one budget: 12 configs, a few seconds a target


def test_the_paged_scheduler_is_driven_through_stops_and_cancels_and_keeps_every_paged_rule() -> None:
    report = conform("stallfree.faults.paged:small", profile="paged", examples=EXAMPLES, budget=BUDGET)
    assert report.capabilities == frozenset({"stop", "cancel"}) and not report.skipped
    assert tuple(report.verdicts) == PAGED_RULE_IDS
    assert report.ok and all(v == PASS for v in report.verdicts.values()), report.verdicts
    assert "CANCEL           holds" in render(report)


@pytest.mark.parametrize("fault", PAGED_FAULTS, ids=lambda f: f"{f.breaks}-{f.__name__}")
def test_the_kit_names_each_paged_faults_rule(fault: type) -> None:
    report = conform(f"stallfree.faults.paged:{fault.__name__}", profile="paged", examples=EXAMPLES, budget=BUDGET)
    assert report.verdicts[fault.breaks] == FAIL, report.verdicts
    assert fault.breaks in report.counterexamples
    assert report.counterexamples[fault.breaks].requires == PAGED_BY_ID[fault.breaks].statement  # the paged rule's
    if fault.breaks == "CANCEL" or fault.__name__ == "LeakOnCancel":  # only a workload with a cancel can show it
        assert report.counterexamples[fault.breaks].workload.cancels
    if fault.__name__ == "StopIgnored":  # only a workload with a stop can
        assert report.counterexamples[fault.breaks].workload.has_stops
