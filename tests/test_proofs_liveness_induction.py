"""LIVENESS-STEPS for any N (`proofs.smt.liveness_induction`): the ranking in steps proved by loop
induction on the reference policy, and refuted, each at a named obligation, on the controls of the
N = 12 theorem; each premise it takes is needed (without it the obligation that uses it fails)."""

from __future__ import annotations

import dataclasses

import pytest
import z3

from stallfree.proofs.smt import induction, liveness_induction
from stallfree.proofs.smt.liveness_planted import ReversedPartials
from stallfree.proofs.smt.liveness_steps import LIVENESS_STEPS, OneTokenPrefill
from stallfree.proofs.smt.mutants import MUTANTS
from stallfree.proofs.smt.policy import Policy
from stallfree.proofs.smt.theorems import prove
from stallfree.spec.verdict import Verdict

LOOP = liveness_induction.LIVENESS_INDUCTIONS[0]


def test_liveness_steps_is_proved_for_any_n_on_the_reference() -> None:
    proved = induction.prove_induction(LOOP)
    assert proved.verdict is Verdict.HOLDS, proved.counterexample


@pytest.mark.parametrize(("control", "obligation"), [
    ("AdmitBeforePartial", "ranking: the rule"),  # admission spent the budget before the partial's chunk
    ("OneTokenPrefill", "plan_partials: consecution"),  # a chunk of one token leaves budget unspent
    ("LifoAdmission", "LIVENESS-STEPS at N=3 (the policy's own step)"),  # not the fold: refuted at N = 3
])
def test_the_controls_of_liveness_steps_are_refuted_for_any_n(control: str, obligation: str) -> None:
    policy = OneTokenPrefill() if control == "OneTokenPrefill" else MUTANTS[control]()
    refuted = induction.prove_induction(LOOP, policy)
    assert refuted.verdict is Verdict.BROKEN, (control, refuted.verdict, refuted.counterexample)
    assert refuted.counterexample is not None and refuted.counterexample["obligation"] == obligation


def test_lifo_is_refuted_only_after_its_fold_premise_fails() -> None:
    """LifoAdmission is no fold of its one-request body, so the loops judge nothing of it: the row
    names the unmet premise beside the fixed-N counterexample that refutes it."""
    refuted = induction.prove_induction(LOOP, MUTANTS["LifoAdmission"]())
    assert refuted.counterexample is not None
    assert refuted.counterexample["premise not met"] == "FOLD: admit (N=3)"


def test_a_policy_that_is_not_the_fold_and_holds_at_three_stays_unknown() -> None:
    """Holding at N = 3 proves nothing for any N: the row stays unknown, naming the unmet premise."""
    result = induction.prove_induction(LOOP, ReversedPartials())
    assert result.verdict is Verdict.UNKNOWN, result.verdict
    assert result.counterexample is not None and result.counterexample["obligation"] == "FOLD: plan_partials (N=3)"


def test_add_of_a_request_that_never_fits_breaks_the_premise() -> None:
    refuted = induction.prove_induction(LOOP, MUTANTS["AcceptNeverFit"]())
    assert refuted.verdict is Verdict.BROKEN
    assert refuted.counterexample is not None
    assert refuted.counterexample["obligation"] == "adds: a request add() queues meets the premise"


def _without(obligation: induction.Obligation, premise: z3.BoolRef) -> induction.Obligation:
    kept = [h for h in obligation.hypothesis.children() if not h.eq(premise)]
    assert len(kept) == obligation.hypothesis.num_args() - 1, "the premise is one conjunct of the hypothesis"
    return induction.Obligation(obligation.name, z3.And(kept), obligation.goal)


def test_each_premise_of_the_state_is_needed() -> None:
    """Without FCFS and PARTIAL-YOUNGEST at the adjacent pair, the ranking loop's consecution fails
    (something past r could be admitted and take the budget); without the state's running count and
    free KV (KV's part) entering the step, the rule fails (the head need not fit)."""
    obligations = {ob.name: ob for ob in liveness_induction.ranking(Policy())}
    c = liveness_induction.ranking_chain(Policy())
    cut = {"ranking: consecution": liveness_induction.adjacent(c, c.i - 1),
           "ranking: the rule": liveness_induction.entered_from_state(c)}
    for name, premise in cut.items():
        result = induction._prove([_without(obligations[name], premise)], LOOP.name, Policy(), 30_000)
        assert result.verdict is Verdict.BROKEN, name


def test_the_any_n_row_agrees_with_the_ranking_at_n_4_on_every_wrong_policy() -> None:
    """Each wrong policy (every mutant, every induction control, OneTokenPrefill) is refuted by the
    any-N row exactly when the N = 4 theorem's ranking (its PARTIAL-YOUNGEST part dropped, which
    the row does not claim) is: the row's invariants are no stronger than the ranking needs."""
    ranking_only = dataclasses.replace(LIVENESS_STEPS, parts=())
    wrong = {**MUTANTS, **induction.CONTROLS, "OneTokenPrefill": OneTokenPrefill}
    verdicts = {name: (induction.prove_induction(LOOP, cls()).verdict, prove(ranking_only, cls(), 4).verdict)
                for name, cls in wrong.items()}
    assert all(row is bounded for row, bounded in verdicts.values()), verdicts
    assert {n for n, (row, _) in verdicts.items() if row is Verdict.BROKEN} >= {
        "AdmitBeforePartial", "OneTokenPrefill", "LifoAdmission"}
    assert {n for n, (row, _) in verdicts.items() if row is Verdict.HOLDS} >= {"FreeDecodes", "CappedAdmissions"}
