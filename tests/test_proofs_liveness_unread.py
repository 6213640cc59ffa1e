"""What LIVENESS (induction, any N) used to leave unread while it printed holds (the second review):
a policy's own `step`, FOLD past N = 4 for a phase its frame refuses, the config and free KV an add
leaves, and the ranking's premise over the adds. Each planted policy (`liveness_planted`) reads
BROKEN, not judged or unknown here, never holds; each control shows what the row held before."""

from __future__ import annotations

from stallfree.proofs.smt import induction, liveness_any_n, liveness_bound, liveness_induction
from stallfree.proofs.smt.liveness_planted import PLANTED
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
