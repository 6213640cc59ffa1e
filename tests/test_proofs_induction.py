"""Any N by induction: for each loop of the step, Z3 proves initiation, consecution and exit over
arrays of any length, on the reference policy; each fails on a wrong policy, among them an
admission cap of 12 and a policy that stalls, both of which every one-iteration theorem lets pass."""

from __future__ import annotations

import pytest
import z3

from stallfree.proofs.smt import chain, fold, induction
from stallfree.proofs.smt.loops import LOOP_THEOREMS, prove_loop
from stallfree.proofs.smt.mutants import MUTANTS
from stallfree.proofs.smt.policy import Policy
from stallfree.proofs.smt.symbolic import SymRequest
from stallfree.spec.verdict import Verdict


@pytest.mark.parametrize("loop", induction.INDUCTIONS, ids=lambda loop: loop.name)
def test_each_loop_is_proved_by_induction_and_fails_on_its_control(loop: induction.LoopInduction) -> None:
    proved = induction.prove_induction(loop)
    assert proved.verdict is Verdict.HOLDS, proved.counterexample
    refuted = induction.prove_induction(loop, induction.control(loop))
    assert refuted.verdict is Verdict.BROKEN, (loop.control, refuted.verdict)
    assert refuted.counterexample is not None and refuted.counterexample["obligation"]


def test_the_cap_and_the_stall_pass_the_one_iteration_theorems_but_not_the_induction() -> None:
    for control, claim in (("CappedAdmissions", "ADMITS"), ("Stalls", "PROGRESS")):
        policy = induction.CONTROLS[control]()
        assert all(prove_loop(t, policy).holds for t in LOOP_THEOREMS)  # what "any N" was before
        loop = next(loop for loop in induction.INDUCTIONS if loop.name.startswith(claim))
        assert induction.prove_induction(loop, policy).verdict is Verdict.BROKEN


@pytest.mark.parametrize("loop", chain.CHAINS, ids=lambda loop: loop.name)
def test_the_chained_phases_prove_the_whole_state_rules_for_any_n(loop: induction.LoopInduction) -> None:
    proved = induction.prove_induction(loop)
    assert proved.verdict is Verdict.HOLDS, proved.counterexample
    refuted = induction.prove_induction(loop, induction.control(loop))
    assert refuted.verdict is Verdict.BROKEN, (loop.control, refuted.verdict)


@pytest.mark.parametrize(("claim", "wrong"), [
    ("READY-WITHIN-BUDGET", "PartialsBeforeDecodes"),  # a ready request left out while a chunk completes
    ("READY-WITHIN-BUDGET", "FreeDecodes"),  # decodes past the budget
    ("ONE-PARTIAL", "AdmitWithoutBudget"),  # a second partial, admitted with no budget left
    ("KV", "EarlyRelease"),  # a reservation back when the prompt is done, tokens still to come
    ("PREFILL-ONCE, ONE-ENTRY (the premise of PER-REQUEST, FINISH)", "RepeatPosition"),  # a chunk past the prompt
    ("PARTIAL-YOUNGEST", "AdmitWithoutBudget"),  # admits behind a short chunk with no budget left
    ("PARTIAL-YOUNGEST", "ShortChunk"),  # a short chunk that leaves budget, so admission goes on behind it
    ("FCFS (the order of the state after the step)", "LongHeadLetsShortIn"),  # admits past a long refused head
])
def test_the_chain_fails_on_each_policy_that_breaks_its_rule(claim: str, wrong: str) -> None:
    loop = next(loop for loop in chain.CHAINS if loop.rules == claim)
    refuted = induction.prove_induction(loop, WRONG[wrong]())
    assert refuted.verdict is Verdict.BROKEN, (wrong, refuted.verdict)
    assert refuted.counterexample is not None and refuted.counterexample["obligation"]


class LongHeadLetsShortIn(Policy):
    """Admission stops at a refused head only if its prompt is short: behind a long refused head a
    shorter request that fits is admitted (a planted FCFS bug, not in `mutants`)."""

    def stops(self, stopped: z3.BoolRef, r: SymRequest, admitted: z3.BoolRef) -> z3.BoolRef:
        return z3.Or(stopped, z3.And(r.waiting, z3.Not(admitted), r.prompt_len <= 4))


WRONG = {**MUTANTS, **induction.CONTROLS, "LongHeadLetsShortIn": LongHeadLetsShortIn}


def test_the_order_rules_fail_at_the_rule_itself_when_admission_runs_before_the_partials() -> None:
    """AdmitBeforePartial keeps every loop's invariant: it is refuted by the last obligation, where
    the phases' order enters (admission was entered with budget a short chunk then spent)."""
    loop = next(loop for loop in chain.CHAINS if loop.rules == "PARTIAL-YOUNGEST")
    refuted = induction.prove_induction(loop, MUTANTS["AdmitBeforePartial"]())
    assert refuted.counterexample is not None and refuted.counterexample["obligation"] == "chain: the rule"


def test_only_the_order_rules_carry_the_order_facts() -> None:
    """SkipAhead and LongHeadLetsShortIn break FCFS alone: the chains that do not need admission's
    order (the whole-state counts; PARTIAL-YOUNGEST, which reads FCFS of the state before) still
    hold on them."""
    for wrong in ("SkipAhead", "LongHeadLetsShortIn"):
        for loop in chain.CHAINS:
            result = induction.prove_induction(loop, WRONG[wrong]())
            expected = Verdict.BROKEN if loop.name.startswith("FCFS") else Verdict.HOLDS
            assert result.verdict is expected, (wrong, loop.name)


def test_no_obligation_of_the_chain_contains_its_goal() -> None:
    """The rule (ready after <= B, partial after <= 1, free after = K - reserved after) is proved by
    the last obligation alone: no loop invariant states it of the state after, so removing the
    premise (the same rule before the step) leaves it unproved."""
    for loop in chain.CHAINS:
        last = loop.obligations(induction.Policy())[-1]
        if last.name != "chain: the rule":
            continue
        exits, _before = last.hypothesis.children()
        bare = induction.Obligation(last.name, exits, last.goal)
        result = induction._prove([bare], loop.name, induction.Policy(), 30_000)
        assert result.verdict is Verdict.BROKEN, loop.name


def test_a_hypothesis_that_cannot_hold_is_reported_vacuous_even_with_a_witness() -> None:
    x = z3.Int("x")
    vacuous = induction.Obligation("consecution", z3.And(x > 0, x < 0), x == 7, x == 1)
    result = induction._prove([vacuous], "a vacuous claim", induction.Policy(), 5_000)
    assert result.verdict is Verdict.UNKNOWN and result.counterexample == {
        "obligation": "consecution", "vacuous": "its hypothesis is unsatisfiable"}


def test_a_policy_that_is_not_the_fold_its_loops_run_is_judged_by_no_chain() -> None:
    """LifoAdmission admits newest first, an order the per-request chain cannot express: its FOLD
    premise fails, so every chained theorem reads unknown (neither holds nor a counterexample of
    the rule), and the reference's phases meet it."""
    for loop in chain.CHAINS:
        result = induction.prove_induction(loop, MUTANTS["LifoAdmission"]())
        assert result.verdict is Verdict.UNKNOWN, loop.name
        assert result.counterexample is not None and result.counterexample["obligation"] == "FOLD: admit (N=3)"
    fold_only = induction._prove(fold.folds(Policy()), "FOLD", Policy(), 30_000)
    assert fold_only.verdict is Verdict.HOLDS, fold_only.counterexample


def test_prove_says_why_a_chained_row_is_unknown() -> None:
    """The row names the unmet premise, not a solver timeout."""
    from stallfree.proofs.suite import _z3_row

    loop = chain.CHAINS[0]
    row = _z3_row(loop.name, "Z3 loop induction", "any N", induction.prove_induction(loop, MUTANTS["LifoAdmission"]()))
    assert row.result is Verdict.UNKNOWN and "FOLD: admit (N=3): premise not met" in row.detail
    assert "ran out of time" not in row.detail


def test_a_policy_that_is_not_the_fold_is_judged_by_no_loop_that_runs_its_phase() -> None:
    """The single-loop inductions run the phase on request i alone too: LifoAdmission fails FOLD at
    admit, so ADMITS and PROGRESS (which run admit) read unknown naming it; DECODES and PARTIALS run
    phases it keeps as folds and still hold; FINISH and PER-REQUEST run no phase (any plan) and are
    judged as before. The reference meets every FOLD each row names."""
    lifo = MUTANTS["LifoAdmission"]()
    judged = {loop.name.split()[0]: induction.prove_induction(loop, lifo) for loop in induction.INDUCTIONS}
    for claim in ("ADMITS", "PROGRESS"):
        assert judged[claim].verdict is Verdict.UNKNOWN, claim
        assert judged[claim].counterexample is not None
        assert judged[claim].counterexample["obligation"] == "FOLD: admit (N=3)", claim
    assert {c: r.verdict for c, r in judged.items() if c not in ("ADMITS", "PROGRESS")} == dict.fromkeys(
        ("DECODES", "PARTIALS", "FINISH", "PER-REQUEST"), Verdict.HOLDS)
    assert [loop.folds for loop in induction.INDUCTIONS if not loop.folds] == [(), ()]  # FINISH, PER-REQUEST
    for phase in ("plan_decodes", "plan_partials", "admit"):
        met = induction._prove([fold.fold(Policy(), phase)], "FOLD", Policy(), 30_000)
        assert met.verdict is Verdict.HOLDS, met.counterexample
