"""The report's pasteable pytest test is real: pasted as is, it fails on the wrong scheduler with the
rule's ID, and passes on a scheduler that keeps the rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from stallfree.conformance.kit import conform
from stallfree.conformance.kit.report import pytest_test, render, workload_json
from stallfree.spec import Workload


def test_pasted_counterexample_fails_on_the_fault_and_passes_once_fixed(tmp_path: Path) -> None:
    target = "stallfree.faults.catalog:SkipAhead"
    report = conform(target, rules=["FCFS"], budget=2, examples=10)
    c = report.counterexamples["FCFS"]
    text = render(report)
    assert "== FCFS broken ==" in text and c.requires in text and workload_json(c.workload) in text
    assert Workload.loads(workload_json(c.workload)) == c.workload
    pasted = pytest_test(target, c)
    assert pasted in text
    (tmp_path / "test_pasted.py").write_text(pasted + "\n")
    fixed = pasted.replace("from stallfree.faults.catalog import SkipAhead",
                           "from stallfree.reference import Scheduler as SkipAhead")
    (tmp_path / "test_fixed.py").write_text(fixed + "\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "1 failed, 1 passed" in result.stdout, result.stdout
    assert f"RuleViolation: FCFS at step {c.step}" in result.stdout
