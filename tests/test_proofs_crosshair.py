"""CrossHair on the reference's contracts finds nothing within its limit; on each copy with a bug
planted (one per rule a contract states) it finds the bug, with a counterexample that breaks that
rule's postcondition on the copy and keeps the contract on the reference (so every check can fail)."""

from __future__ import annotations

import pytest

from stallfree.proofs.contracts import planted_contracts, planted_lifecycle
from stallfree.proofs.contracts import run as crosshair_run
from stallfree.proofs.contracts.planted import PLANTED
from stallfree.proofs.suite import Options, crosshair_rows
from stallfree.spec.verdict import Verdict

CI_SECONDS = 2.0  # CPU seconds per contract: the reference keeps them, so nothing is found at any depth
# A planted copy's search is bounded by PLANTED_ITERATIONS paths (seeded: the same bug at the same path
# at any load); its CPU seconds only stop a runaway.
PLANTED_SECONDS = crosshair_run.PLANTED_S


def test_contracts_of_every_rule_but_the_invariants_hold() -> None:
    result = crosshair_run.check(crosshair_run.CONTRACTS, CI_SECONDS)
    assert result.error is None, result.error
    assert result.found == (), result.found


@pytest.fixture(scope="module")
def planted_result() -> crosshair_run.CrossHairResult:
    """One CrossHair run over every planted copy: one process start instead of one a rule."""
    result = crosshair_run.check(crosshair_run.PLANTED, PLANTED_SECONDS)
    assert result.error is None, result.error
    return result


@pytest.mark.parametrize("rule", list(planted_contracts.TARGETS))
def test_crosshair_finds_the_planted_bug_of_RULE(rule: str, planted_result: crosshair_run.CrossHairResult) -> None:
    calls = planted_result.calls(planted_contracts.FUNCTIONS[rule])
    assert len(calls) == 1, f"{rule}: {planted_result.found}"
    on_reference, on_planted = planted_contracts.replay(rule, calls[0])
    assert on_reference is None, f"the reference broke its contract on {calls[0]}: {on_reference}"
    assert on_planted is not None and on_planted.startswith(rule), on_planted


def test_every_planted_bug_breaks_its_rule_and_has_a_target() -> None:
    assert set(PLANTED) == set(planted_contracts.TARGETS)
    assert all(cls.breaks == rule for rule, cls in PLANTED.items())


def test_every_fault_rule_has_a_contract_and_a_planted_copy() -> None:
    from stallfree.faults import FAULTS
    from stallfree.proofs.contracts import planted_lifecycle

    # CANCEL is stated by the cancel contract, whose planted copy is in planted_lifecycle.
    assert set(FAULTS) - {"CANCEL"} <= set(planted_contracts.TARGETS)
    assert "CANCEL" not in planted_contracts.TARGETS and "CANCEL" in planted_lifecycle.PLANTED


def test_prove_fault_shows_na_for_a_rule_no_contract_states() -> None:
    """ONE-PARTIAL, a state invariant: no CrossHair contract states it, so --fault claims no CrossHair failure."""
    rows = crosshair_rows(Options(fault_rule="ONE-PARTIAL", methods=("crosshair",)), lambda _: None)
    assert [(r.claim, r.result, r.failed) for r in rows] == [
        ("ONE-PARTIAL", "n/a (no contract for ONE-PARTIAL)", False)]


def test_prove_fault_runs_crosshair_on_the_FCFS_planted_bug() -> None:
    """--fault FCFS: CrossHair runs the copy with FCFS's bug planted, not another rule's."""
    rows = crosshair_rows(Options(fault_rule="FCFS", crosshair_seconds=PLANTED_SECONDS), lambda _: None)
    assert [(r.claim, r.method, r.result) for r in rows] == [("FCFS", "CrossHair (PlantedFCFS)", Verdict.BROKEN)]
    assert "schedule_FCFS(" in rows[0].detail and "reference keeps the contract; planted copy FCFS" in rows[0].detail


@pytest.mark.parametrize("module", [planted_contracts, planted_lifecycle])
def test_each_planted_search_is_bounded_by_a_count_of_paths(module) -> None:  # type: ignore[no-untyped-def]
    """The directive CrossHair reads in each planted module is the count `run` documents."""
    import inspect

    directive = f"# crosshair: max_iterations={crosshair_run.PLANTED_ITERATIONS}\n"
    assert directive in inspect.getsource(module).splitlines(keepends=True)
