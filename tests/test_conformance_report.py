"""The report's pasteable pytest test is real: pasted as is, it fails on the wrong scheduler with the
rule's ID, and passes on a scheduler that keeps the rule."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from xml.etree import ElementTree

from stallfree.conformance.kit import conform
from stallfree.conformance.kit.report import printed_test_name, pytest_test, render, workload_json
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


def test_two_printed_tests_pasted_into_one_file_each_check_their_own_counterexample(tmp_path: Path) -> None:
    found = []
    for target, rule in (("stallfree.faults.catalog:SkipAhead", "FCFS"),
                         ("stallfree.faults.catalog:PartialsBeforeDecodes", "DECODE-FIRST")):
        c = conform(target, rules=[rule], budget=4, examples=10).counterexamples[rule]
        found.append((target, c, pytest_test(target, c)))
    names = [f"test_{printed_test_name(c)}" for _, c, _ in found]
    assert len(set(names)) == 2 and all(name in pasted for name, (_, _, pasted) in zip(names, found, strict=True))
    one_file = "\n\n\n".join(pasted for _, _, pasted in found)
    (tmp_path / "test_broken.py").write_text(one_file + "\n")
    fixed = one_file.replace("from stallfree.faults.catalog import SkipAhead",
                             "from stallfree.reference import Scheduler as SkipAhead")
    fixed = fixed.replace("from stallfree.faults.catalog import PartialsBeforeDecodes",
                          "from stallfree.reference import Scheduler as PartialsBeforeDecodes")
    (tmp_path / "test_fixed.py").write_text(fixed + "\n")
    junit = tmp_path / "results.xml"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                             str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "2 failed, 2 passed" in result.stdout, result.stdout
    failed = {case.get("name"): case.find("failure").get("message", "")  # type: ignore[union-attr]
              for case in ElementTree.parse(junit).iter("testcase")
              if case.get("classname") == "test_broken" and case.find("failure") is not None}
    assert sorted(failed) == sorted(names), result.stdout
    for name, (_, c, _) in zip(names, found, strict=True):  # each fails on its own rule, at its own step
        assert f"RuleViolation: {c.rule} at step {c.step}" in failed[name], failed[name]


def test_a_printed_test_is_named_by_its_rule_and_its_workload() -> None:
    c = conform("stallfree.faults.catalog:SkipAhead", rules=["FCFS"], budget=2, examples=10).counterexamples["FCFS"]
    again = conform("stallfree.faults.catalog:SkipAhead", rules=["FCFS"], budget=2, examples=10).counterexamples["FCFS"]
    assert printed_test_name(c) == printed_test_name(again)  # a rerun prints the same name
    other = replace(c, workload=Workload(c.workload.config, (*c.workload.requests, replace(
        c.workload.requests[-1], rid=max(a.rid for a in c.workload.requests) + 1))))
    assert printed_test_name(other) != printed_test_name(c)
    assert printed_test_name(other).startswith("fcfs_minimal_counterexample_")
    digest = printed_test_name(c).rpartition("_")[2].upper()
    assert f"COUNTEREXAMPLE_FCFS_{digest} = " in pytest_test("stallfree.faults.catalog:SkipAhead", c)
