"""LIVENESS (induction, any N) (`proofs.smt.liveness_any_n`): the bound floor(P / B) + D for any N, from
LIVENESS-STEPS's any-N ranking (part a) and the sequence and zero-work theorems (part b). It holds on the
reference; a starving or idling policy makes it read BROKEN, one the induction cannot judge unknown, each
naming the part; part (b) fails on a ranking too weak for the bound and on each premise taken away.
And the lasso check's hidden state: `suite.liveness_row` passes `--hidden`, without which the idler's
counter is merged away and its starvation missed."""

from __future__ import annotations

import argparse
import dataclasses

import pytest
import z3

from stallfree.commands import prove as prove_command
from stallfree.faults.starving import IdleOneInThree, idle_phase
from stallfree.proofs import suite
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.smt import induction, liveness_any_n, liveness_bound, liveness_join
from stallfree.proofs.smt.liveness_planted import PLANTED
from stallfree.proofs.smt.mutants import MUTANTS
from stallfree.proofs.smt.policy import Policy
from stallfree.spec.verdict import Verdict

CONTROLS = {"LifoAdmission": MUTANTS["LifoAdmission"], "ShortestFirst": PLANTED["ShortestFirst"],
            "IdleOneInThree": PLANTED["IdleOneInThree"]}


def test_the_bound_holds_for_any_n_on_the_reference() -> None:
    outcome = liveness_any_n.prove()
    assert outcome.verdict is Verdict.HOLDS, outcome.detail
    assert "floor(P / B) + D" in outcome.detail and "fixed" in outcome.detail and "weak fairness" in outcome.detail
    assert liveness_any_n.JOINED in outcome.detail and "on paper" not in outcome.detail  # the join proved, said
    assert liveness_any_n.INIT_ANY_N in outcome.detail and "N = 12" not in outcome.detail
    # the adds' pairwise reading is checked at N = 3 only: the detail labels what rests on it partial
    assert "partial: the adds' facts for N requests read as those of each adjacent pair" in outcome.detail
    assert "checked against it at N = 3, assumed beyond 3" in outcome.detail



def test_part_a_is_reused_not_proved_again() -> None:
    """Given the ranking's result, the row reads it (and refuses one of another policy)."""
    ranked = induction.prove_induction(liveness_any_n.STEPS, MUTANTS["LifoAdmission"]())
    outcome = liveness_any_n.prove(MUTANTS["LifoAdmission"](), ranked)
    assert outcome.verdict is Verdict.BROKEN and outcome.counterexample is not None
    assert outcome.counterexample["obligation"] == ranked.counterexample["obligation"]  # type: ignore[index]
    with pytest.raises(ValueError, match="LifoAdmission"):
        liveness_any_n.prove(Policy(), ranked)


def test_a_result_of_another_theorem_is_refused_as_part_a() -> None:
    other = induction.prove_induction(induction.INDUCTIONS[0], MUTANTS["LifoAdmission"]())  # DECODES (induction)
    with pytest.raises(ValueError, match=r"DECODES \(induction\).*LIVENESS-STEPS \(induction, phases chained\)"):
        liveness_any_n.prove(MUTANTS["LifoAdmission"](), other)


@pytest.mark.parametrize(("control", "obligation"), [
    ("LifoAdmission", "LIVENESS-STEPS at N=3 (the policy's own step)"),  # not the fold: refuted on its own step
    ("ShortestFirst", "LIVENESS-STEPS at N=3 (the policy's own step)"),  # a short prompt admitted before r
    ("IdleOneInThree", "plan_decodes: consecution"),  # an idle step leaves a ready request undecoded
])
def test_a_starving_or_idling_policy_breaks_the_row(control: str, obligation: str) -> None:
    outcome = liveness_any_n.prove(CONTROLS[control]())
    assert outcome.verdict is Verdict.BROKEN, (control, outcome.verdict, outcome.detail)
    assert outcome.counterexample is not None and outcome.counterexample["part"] == liveness_any_n.PART_A
    assert outcome.counterexample["obligation"] == obligation
    assert outcome.detail.startswith(liveness_any_n.PART_A)


def test_a_policy_the_induction_cannot_judge_leaves_the_row_unknown_naming_part_a() -> None:
    outcome = liveness_any_n.prove(PLANTED["ReversedPartials"]())
    assert outcome.verdict is Verdict.UNKNOWN
    assert outcome.counterexample is not None and outcome.counterexample["part"] == liveness_any_n.PART_A
    assert "FOLD: plan_partials (N=3)" in outcome.detail and "not decided" in outcome.detail


def _units_of_work(p0, p1, d0, d1, budget):  # type: ignore[no-untyped-def]
    """LIVENESS's weaker ranking: P + D falls by one a step (enough for W + w, not for the bound in steps)."""
    return p1 + d1 <= p0 + d0 - 1


def _one_prompt_token(p0, p1, d0, d1, budget):  # type: ignore[no-untyped-def]
    """OneTokenPrefill's pace: D falls by one or P by one."""
    return z3.And(p1 <= p0, d1 <= d0, z3.Or(d1 <= d0 - 1, p1 <= p0 - 1))


@pytest.mark.parametrize("ranking", [_units_of_work, _one_prompt_token])
def test_a_ranking_too_weak_for_the_bound_breaks_part_b(ranking) -> None:  # type: ignore[no-untyped-def]
    outcome = liveness_any_n.prove(Policy(), ranking=ranking)
    assert outcome.verdict is Verdict.BROKEN, outcome.detail
    assert outcome.counterexample is not None and outcome.counterexample["part"] == liveness_any_n.PART_B
    assert outcome.counterexample["obligation"] == "sequence: consecution"


def test_a_ranking_that_proves_anything_leaves_part_b_unknown() -> None:
    """A contradictory step makes the consecution's hypothesis unsatisfiable: the prover says so
    (unknown, vacuous), never holds."""
    outcome = liveness_any_n.prove(Policy(), ranking=lambda p0, p1, d0, d1, budget: z3.BoolVal(False))
    assert outcome.verdict is Verdict.UNKNOWN
    assert outcome.counterexample is not None and outcome.counterexample["part"] == liveness_any_n.PART_B
    assert "vacuous" in outcome.counterexample and "sequence: consecution" in outcome.detail


def _without_last(ob: induction.Obligation) -> induction.Obligation:
    """`ob` with the last conjunct of its hypothesis taken away."""
    kept = ob.hypothesis.children()[:-1]
    return induction.Obligation(ob.name, z3.And(kept), ob.goal)


def _broken(ob: induction.Obligation) -> bool:
    return induction._prove([ob], liveness_any_n.NAME, Policy(), 30_000).verdict is Verdict.BROKEN


def test_the_bound_is_the_least_the_ranking_gives() -> None:
    """Claimed one step sooner, floor(P / B) + D - 1, the sequence's exit is refuted."""
    exit_ = liveness_bound.sequence(sooner=1)[-1]
    assert _broken(exit_) and exit_.name == "sequence: the bound, floor(P / B) + D steps"


def test_each_premise_of_part_b_is_needed() -> None:
    """Without zero work's facts at step T (so without "zero tokens left is the end") the bound's exit
    fails; without the ranking's step the consecution fails; without the per-request parts
    (FIRST-TOKEN) zero tokens need not mean zero prompt."""
    sequence = {ob.name: ob for ob in liveness_bound.sequence()}
    zero = {ob.name: ob for ob in liveness_bound.zero_work()}
    assert not _broken(sequence["sequence: the bound, floor(P / B) + D steps"])
    assert _broken(_without_last(sequence["sequence: the bound, floor(P / B) + D steps"]))  # zero work's facts last
    assert _broken(_without_last(sequence["sequence: consecution"]))  # the ranking's step is last
    consecution = zero["zero work: consecution"]
    c = liveness_join.Behaviour.fresh(Policy()).chain(liveness_join.STEP)
    premise = c.reqs.valid_at(c.i, c.config)
    kept = [h for h in consecution.hypothesis.children() if not h.eq(premise)]
    assert len(kept) == consecution.hypothesis.num_args() - 1, "valid_at is one conjunct of the hypothesis"
    assert _broken(induction.Obligation(consecution.name, z3.And(kept), consecution.goal))


def test_the_default_prove_runs_the_row_after_the_ranking_it_reuses() -> None:
    """The unit writes the row before its premise rows are in (unknown, not checked); `suite.run`
    settles it from them: holds once they hold, unknown naming one of them that is missing."""
    o = suite.Options()
    parts = dict(suite.z3_parts(o))
    rows = parts[f"z3 {liveness_any_n.STEPS.name}"](o, lambda _: None)
    assert [r.claim for r in rows] == [liveness_any_n.STEPS.name, liveness_any_n.NAME]
    assert [r.result for r in rows] == [Verdict.HOLDS, Verdict.UNKNOWN] and rows[1].bound == "any N"
    assert rows[1].counterexample is not None and rows[1].counterexample["verdict"] == "not checked"
    premises = [row for name in liveness_any_n.PREMISES for row in parts[f"z3 {name}"](o, lambda _: None)]
    assert [r.result for r in premises] == [Verdict.HOLDS] * len(liveness_any_n.PREMISES)
    missing = suite.settle_liveness([*(dataclasses.replace(r) for r in rows), *premises[1:]])
    assert missing[1].result is Verdict.UNKNOWN and f"{liveness_any_n.PREMISES[0]} not checked" in missing[1].detail
    settled = suite.settle_liveness([*rows, *premises])
    assert settled[1].result is Verdict.HOLDS and "FINISH (induction)" in settled[1].detail


def test_the_suite_settles_the_row_unknown_on_a_policy_that_breaks_a_premise_row() -> None:
    """NeverRelease: (a) and (b) hold, but its own premise rows (FCFS and KV chains, FINISH) do not."""
    o = suite.Options(policy=PLANTED["NeverRelease"]())
    parts = dict(suite.z3_parts(o))
    rows = [row for name in (liveness_any_n.STEPS.name, *liveness_any_n.PREMISES)
            for row in parts[f"z3 {name}"](o, lambda _: None)]
    assert rows[0].result is Verdict.HOLDS and rows[1].counterexample is not None  # (a) holds, premises pending
    broken = {r.claim for r in rows if r.result is Verdict.BROKEN}
    assert {"KV (induction, phases chained)", "FINISH (induction)"} <= broken
    row = suite.settle_liveness(rows)[1]
    assert row.result is Verdict.UNKNOWN and row.counterexample is not None
    assert row.counterexample["premise"] in broken and row.counterexample["verdict"] == "broken"


def test_premise_rows_of_another_policy_do_not_settle_the_row() -> None:
    o = suite.Options()
    own = dict(suite.z3_parts(o))[f"z3 {liveness_any_n.STEPS.name}"](o, lambda _: None)
    other = [suite.Row(name, "Z3 loop induction (NeverRelease)", "any N", Verdict.HOLDS, 0.0)
             for name in liveness_any_n.PREMISES]
    assert suite.settle_liveness([*own, *other])[1].result is Verdict.UNKNOWN


# -- premises broken: the row reads unknown naming the premise, never holds -------------------------

@pytest.mark.parametrize(("control", "premise"), [
    ("NeverRelease", "FCFS (induction, phases chained)"),  # KV never given back: the first chain it breaks
    ("ZeroStart", liveness_any_n.INIT_ANY_N),  # no KV free at the start
    ("ShrinkingBudget", liveness_any_n.FIXED),  # the budget 1 after a step
    ("ShrinkingKV", liveness_any_n.FIXED),  # K = 1 after a step, the budget as it was
    ("ChangingBudget", liveness_any_n.FIXED),  # any budget after a step
    ("LeakyStart", liveness_any_n.INIT_ANY_N),  # one KV token short at the start
    ("BusyPastTwelve", liveness_any_n.INIT_ANY_N),  # a request running unreserved from index 12 on
])
def test_a_policy_that_breaks_a_premise_leaves_the_row_unknown_naming_it(control: str, premise: str) -> None:
    policy = {**PLANTED, **MUTANTS}[control]()
    ranked = induction.prove_induction(liveness_any_n.STEPS, policy)
    assert ranked.verdict is Verdict.HOLDS  # (a) holds on each: only its premises tell it starves
    outcome = liveness_any_n.prove(policy, ranked)
    assert outcome.verdict is Verdict.UNKNOWN, (control, outcome.verdict, outcome.detail)
    assert outcome.counterexample is not None and outcome.counterexample["part"] == liveness_any_n.PART_P
    assert outcome.counterexample["premise"] == premise and outcome.counterexample["verdict"] == "broken"
    assert outcome.detail.startswith(f"{liveness_any_n.PART_P}: {premise} broken")


def test_the_config_fixed_holds_on_the_reference() -> None:
    assert not _broken(liveness_any_n.config_fixed(Policy()))


# -- the lasso check's hidden state (suite.liveness_row) --------------------------------------------

MERGED_AWAY = Bounds.parse("2,2,8,2,2,2")  # the idler's counter decides its idle step: without it, states merge


def test_the_liveness_row_refutes_the_idler_with_its_hidden_state_and_misses_it_without() -> None:
    declared = suite.liveness_row(suite.Options(factory=IdleOneInThree, hidden=idle_phase,
                                                liveness_bound=MERGED_AWAY), lambda _: None)
    merged = suite.liveness_row(suite.Options(factory=IdleOneInThree, hidden=None, liveness_bound=MERGED_AWAY),
                                lambda _: None)
    assert declared.result is Verdict.BROKEN and "floor(P / B) + D" in declared.detail
    assert merged.result is Verdict.HOLDS  # the miss `--hidden` exists to prevent: states with other counters merged


def test_prove_passes_hidden_to_the_liveness_row() -> None:
    """`stallfree prove --scheduler ... --hidden ...`: the options the command builds give the row the
    counter, which refutes the idler."""
    parser = argparse.ArgumentParser()
    prove_command.configure(parser)
    args = parser.parse_args(["--scheduler", "stallfree.faults.starving:IdleOneInThree", "--hidden",
                              "stallfree.faults.starving:idle_phase", "--methods", "model",
                              "--liveness-bound", MERGED_AWAY.label()])
    options = prove_command._options(args)
    assert options.hidden is idle_phase and options.hidden_declared
    assert suite.liveness_row(options, lambda _: None).result is Verdict.BROKEN


def test_the_suite_names_the_row_as_the_row_names_itself() -> None:
    """`suite.settle_liveness` looks for the row by a name of its own (so that a run without Z3 need not
    import it): the two names must be one."""
    assert suite.LIVENESS_ANY_N == liveness_any_n.NAME
