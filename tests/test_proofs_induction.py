"""Any N by induction: for each loop of the step, Z3 proves initiation, consecution and exit over
arrays of any length, on the reference policy; each fails on a wrong policy, among them an
admission cap of 12 and a policy that stalls, both of which every one-iteration theorem lets pass."""

from __future__ import annotations

import pytest
import z3

from stallfree.proofs.smt import chain, induction
from stallfree.proofs.smt.loops import LOOP_THEOREMS, prove_loop
from stallfree.proofs.smt.mutants import MUTANTS


@pytest.mark.parametrize("loop", induction.INDUCTIONS, ids=lambda loop: loop.name)
def test_each_loop_is_proved_by_induction_and_fails_on_its_control(loop: induction.LoopInduction) -> None:
    proved = induction.prove_induction(loop)
    assert proved.result == "holds", proved.counterexample
    refuted = induction.prove_induction(loop, induction.control(loop))
    assert refuted.result == "counterexample", (loop.control, refuted.result)
    assert refuted.counterexample is not None and refuted.counterexample["obligation"]


def test_the_cap_and_the_stall_pass_the_one_iteration_theorems_but_not_the_induction() -> None:
    for control, claim in (("CappedAdmissions", "ADMITS"), ("Stalls", "PROGRESS")):
        policy = induction.CONTROLS[control]()
        assert all(prove_loop(t, policy).holds for t in LOOP_THEOREMS)  # what "any N" was before
        loop = next(loop for loop in induction.INDUCTIONS if loop.name.startswith(claim))
        assert induction.prove_induction(loop, policy).result == "counterexample"


@pytest.mark.parametrize("loop", chain.CHAINS, ids=lambda loop: loop.name)
def test_the_chained_phases_prove_the_whole_state_rules_for_any_n(loop: induction.LoopInduction) -> None:
    proved = induction.prove_induction(loop)
    assert proved.result == "holds", proved.counterexample
    refuted = induction.prove_induction(loop, induction.control(loop))
    assert refuted.result == "counterexample", (loop.control, refuted.result)


@pytest.mark.parametrize(("claim", "wrong"), [
    ("READY-WITHIN-BUDGET", "PartialsBeforeDecodes"),  # a ready request left out while a chunk completes
    ("READY-WITHIN-BUDGET", "FreeDecodes"),  # decodes past the budget
    ("ONE-PARTIAL", "AdmitWithoutBudget"),  # a second partial, admitted with no budget left
    ("KV", "EarlyRelease"),  # a reservation back when the prompt is done, tokens still to come
    ("PREFILL-ONCE, ONE-ENTRY (the premise of PER-REQUEST, FINISH)", "RepeatPosition"),  # a chunk past the prompt
])
def test_the_chain_fails_on_each_policy_that_breaks_its_rule(claim: str, wrong: str) -> None:
    loop = next(loop for loop in chain.CHAINS if loop.rules == claim)
    refuted = induction.prove_induction(loop, MUTANTS[wrong]())
    assert refuted.result == "counterexample", (wrong, refuted.result)
    assert refuted.counterexample is not None and refuted.counterexample["obligation"]


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
        assert result.result == "counterexample", loop.name


def test_a_hypothesis_that_cannot_hold_is_reported_vacuous_even_with_a_witness() -> None:
    x = z3.Int("x")
    vacuous = induction.Obligation("consecution", z3.And(x > 0, x < 0), x == 7, x == 1)
    result = induction._prove([vacuous], "a vacuous claim", induction.Policy(), 5_000)
    assert result.result == "unknown" and result.counterexample == {
        "obligation": "consecution", "vacuous": "its hypothesis is unsatisfiable"}
