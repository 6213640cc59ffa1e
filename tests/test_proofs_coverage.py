"""The model check's coverage (proofs/explicit/coverage.py): every claim's cases counted per
transition; a claim whose case is never reached at a bound is reported vacuous there, never holding;
the default bounds together reach every case no invariant excludes (docs/proofs.md, the vacuity table)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.proofs import suite
from stallfree.proofs.explicit import coverage, modelcheck
from stallfree.proofs.explicit.bounds import Bounds


def statuses(bound: str, **kwargs: object) -> dict[tuple[str, str], tuple[str, int]]:
    result = modelcheck.check(Bounds.parse(bound), compact=True, **kwargs)  # type: ignore[arg-type]
    assert result.holds and result.coverage is not None
    return {(r.claim, r.case): (r.status, r.transitions) for r in result.coverage}


def test_a_case_never_reached_is_reported_vacuous_not_holding() -> None:
    """At B = 3 but prompts of 3 at most with max_new 2, no partial chunk is ever cut by the budget:
    PARTIAL-NEXT is vacuous there, and the row says so (not judged, never holds)."""
    found = statuses("3,3,9,4,3,2")
    vacuous = {key for key, (status, _) in found.items() if status == coverage.VACUOUS}
    assert vacuous == {("PARTIAL-NEXT", "a partial prompt's chunk cut by the budget")}
    result = modelcheck.check(Bounds.parse("3,3,9,4,3,2"), compact=True)
    rows = suite.coverage_rows(result, "3,3,9,4,3,2")
    assert [(r.claim, r.result) for r in rows] == [("PARTIAL-NEXT", suite.NOT_JUDGED)]
    assert "vacuous at this bound" in rows[0].detail and rows[0].coverage


def test_excluded_and_lifecycle_cases_are_never_counted_as_reached() -> None:
    found = statuses("2,2,6,2,2,2")
    assert found[("PARTIAL-NEXT", "two partial prompts at once (oldest first)")] == (coverage.EXCLUDED, 0)
    assert found[("CANCEL", "a waiting request cancelled")] == (coverage.NO_ACTION, 0)
    assert found[("FCFS", "three or more admitted in one step")] == (coverage.VACUOUS, 0)  # B = 2
    decodes = found[("TOKENS", "a decode")][1]
    assert 0 < found[("TOKENS", "a request ends on its max_new-th token after decoding")][1] <= decodes


def test_workers_count_each_transition_once() -> None:
    """Counts merged from worker processes equal the one-process counts, lifecycle actions included."""
    bound = replace(Bounds.parse("2,2,6,3,2,2"), lifecycle=True)
    one = modelcheck.check(bound, compact=True)
    two = modelcheck.check(bound, workers=2)
    assert one.coverage == two.coverage and one.coverage is not None
    assert all(r.status == coverage.REACHED for r in one.coverage if r.claim == "CANCEL")


def test_prove_reports_vacuous_claims_in_the_table_and_the_json(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "rows.json"
    assert main(["prove", "--methods", "model", "--bound", "2,2,6,2,2,2", "--liveness-bound", "2,2,6,2,2,2",
                 "--json", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "not judged (vacuous at a bound" in out and "VACUOUS: never reached" in out
    rows = json.loads(out_file.read_text())
    vacuous = [r for r in rows if r["method"] == suite.VACUOUS_METHOD]
    assert {r["claim"] for r in vacuous} >= {"SLOTS", "FCFS"} and all(r["result"] == "not judged" for r in vacuous)
    assert all(c["status"] in ("reached", "vacuous", "excluded", "not run") for c in vacuous[0]["coverage"])


def test_a_claim_vacuous_at_the_first_bound_says_where_it_is_reached() -> None:
    """The suite's second bound reaches what the first leaves vacuous, and the vacuous rows say so;
    they stay `not judged` at their own bound."""
    options = suite.Options(methods=("model",), bound=Bounds.parse("2,2,6,2,2,2"),
                            coverage_bound=Bounds.parse(suite.COVERAGE_BOUND),
                            liveness_bound=Bounds.parse("2,2,6,2,2,2"))
    rows = suite.model_rows(options, lambda _: None)
    vacuous = [r for r in rows if r.method == suite.VACUOUS_METHOD]
    assert vacuous and all(r.result == suite.NOT_JUDGED and f"every case reached at {suite.COVERAGE_BOUND}" in r.detail
                           for r in vacuous)
    assert any(r.claim == "COVERAGE" and r.result == suite.HOLDS for r in rows)


@pytest.mark.deep
def test_the_default_bounds_together_reach_every_case() -> None:
    """The published pair: 2,3,8,4,3,3 (S > B) leaves SLOTS and three admissions a step vacuous, which
    the coverage bound (3,3,9,4,4,2) reaches; the stop and cancel cases are reached by the lifecycle check."""
    first = statuses(suite.DEFAULT_BOUND)
    second = statuses(suite.COVERAGE_BOUND)
    lifecycle = modelcheck.check(replace(Bounds.parse(suite.DEFAULT_BOUND), lifecycle=True), compact=True)
    assert lifecycle.coverage is not None
    reached = {(r.claim, r.case) for r in lifecycle.coverage if r.status == coverage.REACHED}
    vacuous_first = {key for key, (status, _) in first.items() if status == coverage.VACUOUS}
    assert {claim for claim, _ in vacuous_first} == {"SLOTS", "FCFS"}
    for case in coverage.CASES:
        key = (case.claim, case.name)
        if case.excluded_by is None:
            assert first[key][0] == coverage.REACHED or second[key][0] == coverage.REACHED or key in reached, key
