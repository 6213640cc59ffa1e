"""The Z3 theorems for cancels (`proofs.smt.cancels`): CANCEL-INVARIANT, CANCEL, FCFS with a
cancelled waiting request, READY-WITHIN-BUDGET and ONE-PARTIAL through stops and cancels; each
seen failing on its negative control; and the cancel differential that ties the Z3 cancel step to
the reference's cancel(rid), seen failing on wrong cancel steps and on the cancel faults."""

from __future__ import annotations

import pytest

from stallfree.spec.verdict import Verdict

z3 = pytest.importorskip("z3")

from stallfree.faults.lifecycle import CancelKeepsKV, CancelTombstone, PlansCancelled  # noqa: E402
from stallfree.proofs.smt import cancel_refinement, cancels  # noqa: E402

N = 5  # symbolic requests: every phase of a cancelled request and one behind it, fast in CI


@pytest.mark.parametrize("theorem", [cancels.cancel_invariant, cancels.cancel_rule, cancels.fcfs_cancels,
                                     cancels.ready_within_budget_composed, cancels.one_partial_composed,
                                     cancels.progress_composed])
def test_CANCEL_theorems_hold_for_the_reference(theorem) -> None:  # type: ignore[no-untyped-def]
    outcome = theorem(N)
    assert outcome.verdict is Verdict.HOLDS, outcome


@pytest.mark.parametrize("control", cancels.CONTROLS, ids=lambda c: f"{c.rule}")
def test_CANCEL_theorems_fail_on_their_negative_controls(control: cancels.Control) -> None:
    outcome = control.run(N)
    assert outcome.verdict is Verdict.BROKEN, outcome


def test_every_cancel_theorem_has_a_control() -> None:
    names = {o.theorem for o in cancels.controls(3)}
    assert names == {o.theorem for o in cancels.theorems(3)}


@pytest.mark.parametrize("phase", ["waiting", "partial", "ready"])
def test_the_CANCEL_hypothesis_is_satisfiable_for_each_phase(phase: str) -> None:
    """A cancel of a waiting, a partial and a ready request (index k in obligation k) each meets the
    hypothesis, adds and step included: the theorem is not vacuous for any of them."""
    _, s = cancels._start(N)  # the obligations' own constants (same names)
    for k, ob in enumerate(cancels.step_obligations(N, cancels.CancelStep(), cancels.cancel_claim, False)):
        solver = z3.Solver()
        solver.add(ob.hypothesis, getattr(s.requests[k], phase))
        if solver.check() == z3.sat:
            return
    pytest.fail(f"no cancel of a {phase} request meets the hypothesis")


def test_Z3_CANCEL_equals_the_reference_on_random_cancels() -> None:
    outcome = cancel_refinement.on_random_cancels(150)
    assert outcome.difference is None, outcome.difference
    assert outcome.cancels >= 150


@pytest.mark.parametrize("wrong", [cancels.KeepsKV, cancels.SwapRemove, cancels.LeftInLine])
def test_the_cancel_differential_finds_a_wrong_Z3_cancel_step(wrong: type[cancels.CancelStep]) -> None:
    outcome = cancel_refinement.on_random_cancels(300, cancel=wrong())
    assert outcome.difference is not None and "Z3 cancel step" in outcome.difference


@pytest.mark.parametrize("fault", [PlansCancelled, CancelKeepsKV, CancelTombstone])
def test_the_cancel_differential_finds_a_wrong_cancel_in_the_code(fault: type) -> None:
    """Found by the monitor (a rule broken), or, for a reservation kept past the cancel (which the
    monitor judges only at the next schedule(), the contract's point), by the state after the cancel
    differing from the Z3 cancel step's, which returns it at once as the reference does."""
    outcome = cancel_refinement.on_random_cancels(300, factory=fault)
    assert outcome.difference is not None, fault
    expected = "the Z3 cancel step" if fault is CancelKeepsKV else "broke"
    assert expected in outcome.difference, outcome.difference


def test_prove_fault_CANCEL_shows_the_cancel_controls_failing(capsys: pytest.CaptureFixture[str]) -> None:
    """Through the command a user runs: `prove --fault CANCEL` refutes CANCEL on the wrong cancel
    steps and finds the wrong Z3 cancel step apart from the code's cancel."""
    from stallfree.main import main

    assert main(["prove", "--fault", "cancel", "--requests", "3", "--methods", "z3"]) == 1
    out = capsys.readouterr().out
    assert "Z3 cancel (LeftInLine)" in out and "Z3 cancel (KeepsKV)" in out and "BROKEN" in out
    assert "a cancel of request index" in out  # the counterexample state, readable
