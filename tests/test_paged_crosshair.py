"""CrossHair on the paged contracts: the postconditions break on a paged fault (the negative control,
in the default run); on the paged scheduler they are not refuted within the limit (deep: slow)."""

from __future__ import annotations

import pytest

pytest.importorskip("crosshair")

from stallfree.proofs import paged_suite
from stallfree.spec.verdict import Verdict


@pytest.mark.parametrize("rule", ["NEVER-FIT", "BLOCKS"])
def test_the_paged_contracts_break_on_their_fault(rule: str) -> None:
    (row,) = paged_suite.crosshair_rows(rule)
    assert row.result == Verdict.BROKEN, row.detail
    assert "when calling planted_" in row.detail


@pytest.mark.deep
def test_the_paged_contracts_are_not_refuted_on_the_paged_scheduler() -> None:
    rows = paged_suite.crosshair_rows()
    assert [r.result for r in rows] == [Verdict.NOT_REFUTED] * 2, [r.detail for r in rows]


def test_a_rule_without_a_paged_contract_is_not_applicable() -> None:
    (row,) = paged_suite.crosshair_rows("WATERMARK")
    assert row.result.startswith("n/a")
