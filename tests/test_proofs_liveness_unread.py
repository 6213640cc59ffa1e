"""What LIVENESS (induction, any N) used to leave unread while it printed holds (the second review):
a policy's own `step`, FOLD past N = 4 for a phase its frame refuses, the config and free KV an add
leaves, and the ranking's premise over the adds. Each planted policy (`liveness_planted`) reads
BROKEN, not judged or unknown here, never holds; each control shows what the row held before."""

from __future__ import annotations

import pytest
import z3

from stallfree.proofs.smt import (
    induction,
    liveness_adds,
    liveness_any_n,
    liveness_bound,
    liveness_induction,
    liveness_join,
)
from stallfree.proofs.smt.liveness_planted import CORRECT, PLANTED
from stallfree.proofs.smt.policy import Policy
from stallfree.proofs.smt.symbolic import SymConfig, SymRequest
from stallfree.spec.verdict import Verdict


def test_a_policy_with_its_own_step_is_not_judged_and_the_parts_never_read_it() -> None:
    """IdleStep plans nothing at any N; IdleStepPastTwelve only past twelve requests. The row reads
    both not judged, naming why. The control: (a) and (b) hold on IdleStep, since neither runs its
    step, while its own step at N = 3 (LIVENESS-STEPS's fixed-N refutation) is refuted."""
    for name in ("IdleStep", "IdleStepPastTwelve"):
        outcome = liveness_any_n.prove(PLANTED[name]())
        assert outcome.verdict is Verdict.NOT_JUDGED, (name, outcome.verdict, outcome.detail)
        assert "overrides step()" in outcome.detail and "Chain.after" in outcome.detail
    policy = PLANTED["IdleStep"]()
    assert induction.prove_induction(liveness_any_n.STEPS, policy).verdict is Verdict.HOLDS
    assert induction._prove(liveness_bound.bound(policy=policy), liveness_any_n.NAME, policy, 30_000).holds
    own_step = induction._prove([liveness_induction.refute_at_three(policy)], liveness_any_n.NAME, policy, 30_000)
    assert own_step.verdict is Verdict.BROKEN


def test_a_phase_fold_ties_to_the_loops_only_up_to_four_requests_leaves_the_row_unknown() -> None:
    """LifoPastFour's admission and IdlePastFour's decodes are the reference's up to four requests, not
    beyond: FOLD's frame refuses both phases (an `if len(...)` before the loop), so FOLD is checked of them
    at N <= 4 only. The control: (a) holds on both (that fallback is its premise) and so does (b), which
    the row used to read as holds for any N; now it is unknown naming the phase."""
    for name, phase in (("LifoPastFour", "admit"), ("IdlePastFour", "plan_decodes")):
        policy = PLANTED[name]()
        ranked = induction.prove_induction(liveness_any_n.STEPS, policy)
        assert ranked.verdict is Verdict.HOLDS, (name, ranked.counterexample)
        assert induction._prove(liveness_bound.bound(policy=policy), liveness_any_n.NAME, policy, 30_000).holds
        outcome = liveness_any_n.prove(policy, ranked)
        assert outcome.verdict is Verdict.UNKNOWN, (name, outcome.verdict, outcome.detail)
        assert outcome.counterexample is not None and list(outcome.counterexample["frame refuses"]) == [phase]
        assert f"FOLD of {phase} checked at N <= 4" in outcome.detail


ADDS = ("join: the adds leave the config and the free KV", "join: the adds keep the ranking's premise")


def _old_join(policy: Policy) -> list[induction.Obligation]:
    """The join without the adds' obligations (`liveness_adds`): what the row read of add() before."""
    return [ob for ob in liveness_join.join(policy) if not ob.name.startswith(ADDS)]


@pytest.mark.parametrize(("name", "obligation"), [
    ("DrainOnAdd", "join: the adds leave the config and the free KV (N = 1)"),  # no free KV after an add
    ("BudgetOneOnAdd", "join: the adds leave the config and the free KV (N = 1)"),  # B lowered to 1 by an add
    ("ShortJumpOnAdd", "join: the adds keep the ranking's premise (N = 1)"),  # an add admits, no KV reserved
])
def test_an_add_that_changes_what_the_step_left_is_refuted_at_the_join(name: str, obligation: str) -> None:
    """Each passes part (a) (the per-request premise of a request its own add() takes, included) and the
    join as it was; the join with the adds' obligations refutes it, so the row reads BROKEN at (b)."""
    policy = PLANTED[name]()
    assert induction._prove(_old_join(policy), liveness_join.NAME, policy, 30_000).holds  # the control
    ranked = induction.prove_induction(liveness_any_n.STEPS, policy)
    assert ranked.verdict is Verdict.HOLDS
    outcome = liveness_any_n.prove(policy, ranked)
    assert outcome.verdict is Verdict.BROKEN, (name, outcome.verdict, outcome.detail)
    assert outcome.counterexample is not None and outcome.counterexample["part"] == liveness_any_n.PART_B
    assert outcome.counterexample["obligation"] == obligation


@pytest.mark.parametrize("size", liveness_adds.SIZES)
def test_each_size_of_the_adds_obligations_can_fail(size: int) -> None:
    """On each number of requests the adds are checked on, DrainOnAdd breaks the frame and ShortJumpOnAdd
    the premise, while the reference holds both."""
    config = SymConfig.fresh()
    for policy, check, broken in ((PLANTED["DrainOnAdd"](), liveness_adds.frame, True),
                                  (PLANTED["ShortJumpOnAdd"](), liveness_adds.premise, True),
                                  (Policy(), liveness_adds.frame, False), (Policy(), liveness_adds.premise, False)):
        result = induction._prove([check(policy, config, size)], liveness_join.NAME, policy, 30_000)
        assert result.verdict is (Verdict.BROKEN if broken else Verdict.HOLDS), (policy.name, check.__name__, size)


def _one_name_pairwise(policy: Policy) -> induction.Obligation:
    """`pairwise` as it was: the three-request call and both pairs' calls under one name, so that pair (1, 2)
    reads index 1's own symbols under the name the three-request call gives index 0."""
    config = SymConfig.fresh()
    xs = tuple(SymRequest.fresh(f"old.y{i}") for i in range(3))
    flags, kv = tuple(z3.Bool(f"old.b{i}") for i in range(3)), z3.Int("old.kv")
    three, facts = liveness_adds.named(policy, config, xs, flags, "one", kv)
    goal = []
    for first in (0, 1):
        pair, pair_facts = liveness_adds.named(policy, config, xs[first:first + 2], flags[first:first + 2], "one", kv)
        goal += [pair_facts, *liveness_join._same(three.requests[first], pair.requests[0]),
                 *liveness_join._same(three.requests[first + 1], pair.requests[1])]
    return induction.Obligation("pairwise, one name", z3.And(config.valid(), facts), z3.And(goal))


def test_a_correct_policy_that_draws_lengths_in_add_is_not_refuted() -> None:
    """FreshPrompt (correct) chooses a new request's lengths as add() takes it. The control: the pairwise
    check with one name for every call refutes it (spuriously); with a name per call and each pair's own
    symbols chosen, the join holds, and so does the row."""
    policy = CORRECT["FreshPrompt"]()
    old = induction._prove([_one_name_pairwise(policy)], liveness_join.NAME, policy, 30_000)
    assert old.verdict is Verdict.BROKEN
    assert induction._prove([_one_name_pairwise(Policy())], liveness_join.NAME, Policy(), 30_000).holds
    assert induction._prove(liveness_join.join(policy), liveness_join.NAME, policy, 30_000).holds
    assert liveness_any_n.prove(policy).verdict is Verdict.HOLDS


def test_the_reference_holds_and_its_detail_says_what_is_assumed_and_outside_the_row() -> None:
    """The reference still holds; the detail names the adds' obligations, the instantiation step, the
    scope (no stops or cancels), the cases the row does not judge as holds, and what it assumes unchecked."""
    outcome = liveness_any_n.prove(Policy())
    assert outcome.verdict is Verdict.HOLDS, outcome.detail
    for said in ("leave the config and the free KV", "keep the ranking's premise", "instantiation: a statement "
                 "proved for a free step t", "no stops or cancels",
                 "each phase the policy's own method of its name, once, and initial() the shared one (else not judged)",
                 "every phase in FOLD's frame and writing only its own plan entries (else unknown)",
                 "assumed, not checked: the adds always enabled", "only through the symbols it names",
                 "attributes unchanged by value"):
        assert said in outcome.detail, said


def test_a_step_that_shrinks_k_breaks_the_config_fixed_not_only_the_budget() -> None:
    """ShrinkingKV leaves K = 1 after a step, B as it was. The control: the budget part of the premise
    (all that BUDGET FIXED checked before) holds on it; the whole config fixed is refuted, so the row
    reads unknown naming it."""
    policy = PLANTED["ShrinkingKV"]()
    config = SymConfig.fresh()
    budget_only = induction.Obligation("the budget alone", config.valid(),
                                       policy.after_config(config).token_budget == config.token_budget)
    assert induction._prove([budget_only], liveness_any_n.NAME, policy, 30_000).holds
    assert induction._prove([liveness_any_n.config_fixed(policy)], liveness_any_n.NAME, policy,
                            30_000).verdict is Verdict.BROKEN
    outcome = liveness_any_n.prove(policy)
    assert outcome.verdict is Verdict.UNKNOWN and outcome.counterexample is not None
    assert outcome.counterexample["premise"] == liveness_any_n.FIXED
