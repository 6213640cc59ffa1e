"""The conformance kit with stops and cancels: a target that supports them is driven through both
and each wrong way of handling them is caught, naming its rule; a target without cancel() or the
stopped argument is reported as not supporting that capability, its tests skipped and listed, never
judged broken and never passed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from stallfree.conformance.kit import FAIL, NOT_SUPPORTED, PASS, conform
from stallfree.conformance.kit.report import render
from stallfree.faults import LIFECYCLE_FAULTS

EXAMPLES = 4


def test_a_target_without_cancel_or_stops_is_reported_as_not_supporting_them() -> None:
    report = conform("stallfree.testing.plain:Plain", examples=EXAMPLES, budget=4)
    assert report.capabilities == frozenset()
    assert report.verdicts["CANCEL"] == NOT_SUPPORTED and "CANCEL" not in report.counterexamples
    assert all(v == PASS for r, v in report.verdicts.items() if r != "CANCEL")  # the plain protocol: kept
    assert [line.split(":")[0] for line in report.skipped] == ["stop", "cancel"]
    text = render(report)
    assert "CANCEL           not supported" in text
    assert "not supported by the target, so skipped (not judged, not passed):" in text
    assert "  stop: workloads in which requests stop before max_new" in text
    data = report.to_json()
    assert data["capabilities"] == {"stop": False, "cancel": False} and len(data["skipped"]) == 2
    assert json.loads(json.dumps(data))["rules"]["CANCEL"]["verdict"] == NOT_SUPPORTED


def test_a_target_with_stops_but_no_cancel_is_judged_on_stops_only() -> None:
    report = conform("stallfree.testing.plain:StopsOnly", examples=EXAMPLES, budget=4)
    assert report.capabilities == frozenset({"stop"})
    assert report.verdicts["CANCEL"] == NOT_SUPPORTED and report.ok
    assert [line.split(":")[0] for line in report.skipped] == ["cancel"]


def test_the_reference_supports_both_and_keeps_every_rule() -> None:
    report = conform("stallfree.reference:Scheduler", examples=EXAMPLES, budget=4)
    assert report.capabilities == frozenset({"stop", "cancel"}) and not report.skipped
    assert report.ok and all(v == PASS for v in report.verdicts.values()), report.verdicts


# StopsAnyRid is left out: the kit offers no stop the contract refuses (the state machine does).
KIT_FAULTS = [f for f in LIFECYCLE_FAULTS if f.__name__ != "StopsAnyRid"]


@pytest.mark.parametrize("fault", KIT_FAULTS, ids=lambda f: f"{f.breaks}-{f.__name__}")
def test_the_kit_catches_each_lifecycle_fault_under_its_rule(fault: type) -> None:
    report = conform(f"stallfree.faults.lifecycle:{fault.__name__}", rules=[fault.breaks], examples=EXAMPLES)
    assert report.verdicts[fault.breaks] == FAIL, report.verdicts
    c = report.counterexamples[fault.breaks]
    assert c.workload.cancels or any(a.stop_after is not None for a in c.workload.requests)


def test_the_pytest_plugin_skips_a_capability_the_target_lacks(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "test_mine.py").write_text(
        "from stallfree.conformance import conformance_tests\n\n"
        'test_mine = conformance_tests("stallfree.testing.plain:Plain", examples=2, budget=4)\n'
    )
    env = {"PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-rs"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test_mine.py::test_mine[CANCEL] SKIPPED" in result.stdout
    assert "CANCEL not supported by the target: stop: workloads in which requests stop" in result.stdout
    assert "14 passed, 1 skipped" in result.stdout
