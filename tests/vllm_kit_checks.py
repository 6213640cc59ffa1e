"""A check shared by the live vLLM kit tests (test_vllm_paged, test_vllm_prefix)."""

from __future__ import annotations

from typing import Any

import pytest

from stallfree.conformance import check_workload
from stallfree.conformance.kit import NOT_APPLICABLE, PASS
from stallfree.conformance.kit.report import render
from stallfree.spec import RuleViolation


def holds_all_but(report: Any, breaks: dict[str, str], factory: Any) -> None:
    """The rules `report` found broken are exactly those of `breaks` (rule -> words its counterexample
    shows), each 1-minimal and breaking again when replayed on `factory` in-process (the printed test's
    call); NEVER-FIT is not applicable and every other rule holds."""
    assert set(report.counterexamples) == set(breaks), render(report)
    for rule, shows in breaks.items():
        c = report.counterexamples[rule]
        assert c.minimal and shows in c.message, render(report)
        with pytest.raises(RuleViolation) as broken:
            check_workload(c.workload, factory, rules=[rule])
        assert broken.value.rule == rule
    assert report.verdicts["NEVER-FIT"] == NOT_APPLICABLE
    assert {v for r, v in report.verdicts.items() if r not in breaks and r != "NEVER-FIT"} == {PASS}
