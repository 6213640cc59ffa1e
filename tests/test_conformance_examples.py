"""The two worked examples of docs/conformance.md report what the page says they report."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stallfree.conformance.kit import FAIL, conform

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "docs" / "examples"
EXAMPLES = 3  # per grid point


@pytest.fixture(autouse=True)
def examples_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES_DIR))
    monkeypatch.delitem(sys.modules, "skip_ahead", raising=False)


def broken(target: str, **options: object) -> set[str]:
    report = conform(target, examples=EXAMPLES, **options)  # type: ignore[arg-type]
    assert all(c.minimal for c in report.counterexamples.values())
    return {rule for rule, verdict in report.verdicts.items() if verdict == FAIL} | set(report.counterexamples)


def test_skip_ahead_breaks_fcfs_only() -> None:
    assert broken("skip_ahead:SkipAhead") == {"FCFS"}


def test_prefill_first_breaks_decode_first_and_work_conserving_and_keeps_safety() -> None:
    assert broken("prefill_first:PrefillFirst") == {"DECODE-FIRST", "WORK-CONSERVING"}
    assert broken("prefill_first:PrefillFirst", profile="safety") == set()
