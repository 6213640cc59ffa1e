"""The variants under stops and cancels in the conformance kit: each variant keeps its whole profile,
CANCEL and the stop clause of TOKENS included (never "not supported"); each lifecycle fault put on a
variant is caught under its rule; and the default aging profile's workloads reach aging, so that a
scheduler that never ages is caught under AGING-BOUND, while the aging schedulers pass."""

from __future__ import annotations

import pytest

from stallfree.conformance.kit import FAIL, PASS, conform
from stallfree.faults.variant_lifecycle import VARIANT_LIFECYCLE_FAULTS
from stallfree.spec.variants.priority import DEFAULT_AGING, MAX_PRIORITY

EXAMPLES = 4
PROFILES = {"Aligned": "aligned", "BatchedAligned": "aligned", "Rotating": "rotation", "BatchedRotating": "rotation",
            "Prioritized": "aging", "BatchedPrioritized": "aging", "StaticBatching": "static"}
MODULES = {"Aligned": "aligned", "BatchedAligned": "aligned", "Rotating": "rotating", "BatchedRotating": "rotating",
           "Prioritized": "priority", "BatchedPrioritized": "priority", "StaticBatching": "static"}


@pytest.mark.parametrize("variant", sorted(PROFILES))
def test_variant_keeps_its_profile_with_stops_and_cancels(variant: str) -> None:
    report = conform(f"stallfree.variants.{MODULES[variant]}:{variant}", profile=PROFILES[variant], examples=EXAMPLES)
    assert report.capabilities == frozenset({"stop", "cancel"}) and not report.skipped
    assert report.ok and all(v == PASS for v in report.verdicts.values()), report.verdicts


# The model checker catches every lifecycle fault on every variant (tests/test_variant_modelcheck.py);
# the kit, here, one fault of each lifecycle rule, over the variants and both renderings, to stay
# quick. It offers no stop the contract refuses (the model checker does), so StopsAnyRid is not here.
KIT_FAULTS = [(variant, next(f for f in VARIANT_LIFECYCLE_FAULTS[variant] if f.__name__ == name)) for variant, name in (
    ("Rotating", "CancelAnythingOnRotating"), ("BatchedAligned", "CancelQuietlyOnBatchedAligned"),
    ("Rotating", "DecodesAfterStopOnRotating"), ("Rotating", "LateStopReleaseOnRotating"),
    ("Aligned", "SwapRemoveCancelOnAligned"), ("Prioritized", "LevelTombstone"),
    ("StaticBatching", "CancelKeepsKVOnStaticBatching"))]


@pytest.mark.parametrize("variant, fault", KIT_FAULTS, ids=lambda x: x if isinstance(x, str) else x.__name__)
def test_the_kit_catches_each_lifecycle_fault_on_the_variant(variant: str, fault: type) -> None:
    report = conform(f"stallfree.faults.variant_lifecycle:{fault.__name__}", profile=PROFILES[variant],
                     examples=EXAMPLES)
    assert report.verdicts[fault.breaks] == FAIL, report.verdicts
    c = report.counterexamples[fault.breaks]
    assert c.workload.cancels or any(a.stop_after is not None for a in c.workload.requests)


def test_the_default_aging_profile_catches_a_scheduler_that_never_ages() -> None:
    report = conform("stallfree.faults.priority:NoAging", profile="aging", examples=EXAMPLES)
    assert report.verdicts["AGING-BOUND"] == FAIL, report.verdicts
    requests = report.counterexamples["AGING-BOUND"].workload.requests
    waited = max(a.arrival_step for a in requests) - min(a.arrival_step for a in requests)
    assert waited >= DEFAULT_AGING  # the break needs a wait of (P - p) * A steps, p < P
    assert max(a.priority for a in requests) <= MAX_PRIORITY
