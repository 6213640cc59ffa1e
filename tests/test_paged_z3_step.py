"""The paged design's Z3 step theorems (`proofs.smt.paged_step`): BLOCKS, TOKENS-KEPT, RECOMPUTE,
PREEMPT-ORDER, PREEMPT-BOUND, TERMINATION (the ranking function under preemption), END, STOP-READY,
CANCEL and the whole invariant hold over a symbolic paged step with cancels before it and stops in
it; each is refuted on every wrong policy that makes its fault's mistake (named as the fault in
stallfree.faults.paged); and the hypothesis reaches preempting steps, re-admissions, cancels of each
kind of request and stops, so no theorem holds vacuously."""

from __future__ import annotations

import pytest

z3 = pytest.importorskip("z3")

from stallfree.faults.paged import PAGED_FAULTS  # noqa: E402
from stallfree.proofs.paged_suite import z3_rows  # noqa: E402
from stallfree.proofs.smt import paged_lemmas, paged_step  # noqa: E402
from stallfree.spec.verdict import Verdict  # noqa: E402

N = 2  # symbolic requests in CI (the published rows use 5): enough for a preemption beside the oldest


@pytest.mark.parametrize("theorem", paged_step.THEOREMS, ids=lambda t: t.name)
def test_the_paged_step_theorem_holds(theorem: paged_step.PagedTheorem) -> None:
    outcome = paged_step.prove(theorem, None, N)
    assert outcome.verdict is Verdict.HOLDS, outcome


def test_PAGED_INIT_a_new_scheduler_satisfies_the_invariant() -> None:
    assert paged_step.prove_init(N).verdict is Verdict.HOLDS


CONTROLS = [(t, c) for t in paged_step.THEOREMS for c in t.controls]


@pytest.mark.parametrize(("theorem", "control"), CONTROLS, ids=lambda x: getattr(x, "name", getattr(x, "__name__", "")))
def test_the_paged_step_theorem_fails_on_its_control(theorem: paged_step.PagedTheorem, control: type) -> None:
    outcome = paged_step.prove(theorem, control(), N)
    assert outcome.verdict is Verdict.BROKEN and "block_size" in outcome.counterexample, outcome


@pytest.mark.parametrize(("theorem", "control"), CONTROLS, ids=lambda x: getattr(x, "name", getattr(x, "__name__", "")))
def test_each_paged_fault_is_still_refuted_at_the_published_N(theorem: paged_step.PagedTheorem, control: type) -> None:
    """At the N the rows print (PAGED_N, 5), PREEMPT-BOUND proved through its stepping stones."""
    outcome = paged_step.prove(theorem, control())
    assert outcome.verdict is Verdict.BROKEN and "block_size" in outcome.counterexample, outcome


def test_PREEMPT_BOUND_holds_at_the_published_N() -> None:
    by_name = {t.name: t for t in paged_step.THEOREMS}
    assert paged_step.PAGED_N >= 4
    assert paged_step.prove(by_name["PREEMPT-BOUND"]).verdict is Verdict.HOLDS


@pytest.mark.parametrize("bs", paged_step.BLOCK_SIZES)
def test_PREEMPT_BOUND_stepping_stones_are_proved_not_skipped(bs: int) -> None:
    """PEAK-ROOM, POOL-HELD and DECODES-FIT (`paged_lemmas.decodes_fit`) are proved at PAGED_N: the
    claim after them is judged with them, not alone (what prove() falls back to when one fails)."""
    from stallfree.proofs.smt.in_turn import prove_in_turn

    hypothesis, w, t = transition(paged_step.PagedPolicy(), paged_step.PAGED_N, bs)
    solver = z3.SolverFor("QF_LIA")
    solver.add(hypothesis)
    assert prove_in_turn(solver, paged_step.conjuncts(paged_lemmas.decodes_fit(w, t))).verdict is Verdict.HOLDS


class EveryDecodeNeedsABlock(paged_step.PagedPolicy):
    """A wrong policy for the fit part alone: it counts every decode as taking a new block, so it
    preempts while the running requests' peaks still fit the pool."""

    def preempt_for_decodes(self, s, d, need):  # type: ignore[no-untyped-def]
        return super().preempt_for_decodes(s, d, [r.ready for r in s.requests])


def fit_part(w: paged_step.Withdrawn, t: paged_step.PagedStep) -> z3.BoolRef:
    """PREEMPT-BOUND's last conjunct: nothing is preempted while the running requests' peaks fit the pool."""
    return paged_step.preempt_bound_claim(w, t).children()[-1]


@pytest.mark.parametrize("policy", [paged_step.PagedPolicy, EveryDecodeNeedsABlock], ids=lambda p: p.__name__)
def test_PREEMPT_BOUND_fit_part_through_its_stepping_stones_holds_or_is_refuted(policy: type) -> None:
    theorem = paged_step.PagedTheorem("PREEMPT-BOUND (fit)", fit_part, (), (paged_lemmas.decodes_fit,))
    outcome = paged_step.prove(theorem, policy())
    expected = Verdict.HOLDS if policy is paged_step.PagedPolicy else Verdict.BROKEN
    assert outcome.verdict is expected, outcome


def test_each_control_is_named_after_a_paged_fault() -> None:
    faults = {f.__name__ for f in PAGED_FAULTS}
    for theorem in paged_step.THEOREMS:
        assert theorem.controls
        for control in theorem.controls:
            assert control.__name__ in faults, control.__name__


def test_CANCEL_and_END_refuted_for_the_end_controls_say_which_request_ended() -> None:
    by_name = {t.name: t for t in paged_step.THEOREMS}
    cancel = paged_step.prove(by_name["CANCEL"], paged_step.CancelIgnored(), N)
    assert "cancelled [" in cancel.counterexample and "cancelled none" not in cancel.counterexample, cancel
    end = paged_step.prove(by_name["END"], paged_step.StopIgnored(), N)
    assert "stops [" in end.counterexample and "stops none" not in end.counterexample, end


@pytest.mark.parametrize("bs", paged_step.BLOCK_SIZES)
def test_the_hypothesis_reaches_preemption_and_readmission(bs: int) -> None:
    policy = paged_step.PagedPolicy()
    s0 = paged_step.PagedState.fresh("s0", 3, bs)
    arrived, adds = policy.arrive(s0, "s1")
    t = policy.step(arrived)
    readmitted = [z3.And(a, r.target > r.prompt_len) for a, r in zip(t.admit, arrived.requests, strict=True)]
    for witness in (z3.Or(t.preempted), z3.Or(readmitted)):
        solver = z3.Solver()
        solver.add(paged_step.invariant(s0), adds, t.facts, witness)
        assert solver.check() == z3.sat


def transition(policy: paged_step.PagedPolicy, n: int, bs: int) -> tuple[z3.BoolRef, paged_step.Withdrawn,
                                                                       paged_step.PagedStep]:
    s0 = paged_step.PagedState.fresh("s0", n, bs)
    arrived, adds = policy.arrive(s0, "s1")
    w = policy.cancel(arrived, "s1c")
    t = policy.step(w.after)
    return z3.And(paged_step.invariant(s0), adds, w.facts, t.facts), w, t


@pytest.mark.parametrize("bs", paged_step.BLOCK_SIZES)
def test_the_hypothesis_reaches_cancels_of_each_kind_and_stops(bs: int) -> None:
    """A cancel of a waiting, a preempted (waiting, its target past its prompt), a partial and a ready
    request; a stop of a request decoding and of one whose prefill the step completes; a stop and a
    cancel beside a preemption."""
    hypothesis, w, t = transition(paged_step.PagedPolicy(), 3, bs)
    before, during = w.before.requests, t.before.requests
    kinds = {
        "waiting": [z3.And(c, r.waiting, r.target == r.prompt_len) for c, r in zip(w.cancels, before, strict=True)],
        "preempted": [z3.And(c, r.waiting, r.target > r.prompt_len) for c, r in zip(w.cancels, before, strict=True)],
        "partial": [z3.And(c, r.partial) for c, r in zip(w.cancels, before, strict=True)],
        "ready": [z3.And(c, r.ready, r.held > 0) for c, r in zip(w.cancels, before, strict=True)],
        "stop decoding": [z3.And(x, d, r.ready) for x, d, r in zip(t.stopped, t.decode, during, strict=True)],
        "stop first token": [z3.And(x, z3.Not(d)) for x, d in zip(t.stopped, t.decode, strict=True)],
        "stop and preempt": [z3.And(z3.Or(t.stopped), z3.Or(w.cancels), z3.Or(t.preempted))],
    }
    for kind, witness in kinds.items():
        solver = z3.Solver()
        solver.add(hypothesis, z3.Or(witness))
        assert solver.check() == z3.sat, kind


def test_prove_fault_CANCEL_refutes_CANCEL_through_the_paged_rows() -> None:
    rows = z3_rows("CANCEL")
    assert {(r.claim, r.result) for r in rows} == {("CANCEL", Verdict.BROKEN)}
    assert all("CancelIgnored" in r.method for r in rows)


def test_prove_fault_PREEMPT_BOUND_refutes_TERMINATION_through_the_paged_rows() -> None:
    rows = z3_rows("PREEMPT-BOUND")
    assert {(r.claim, r.result) for r in rows} == {("PREEMPT-BOUND", Verdict.BROKEN), ("TERMINATION", Verdict.BROKEN)}


def test_Z3_PAGED_STEP_equals_the_paged_scheduler_on_random_states_with_preemption() -> None:
    from stallfree.proofs.smt import paged_refinement

    found = paged_refinement.on_random_states(200)
    assert found.difference is None, found.difference
    assert found.states >= 200 and found.preempting >= 5  # preempting steps are compared, not only calm ones
    assert found.cancels >= 10 and found.stops >= 10  # and steps with cancels and stops


@pytest.mark.parametrize("wrong", ["PreemptOldest", "RecomputeOneMore", "LeakOnEnd", "OverRun", "RequeueAtBack",
                                   "CancelIgnored", "LeakOnCancel", "StopIgnored", "EarlyToken"])
def test_the_paged_differential_tells_a_wrong_policy_or_fault_apart(wrong: str) -> None:
    """Both ways: the Z3 policy making the fault's mistake against the code, and the fault's code
    against the Z3 paged step."""
    from stallfree.faults import paged as faults
    from stallfree.proofs.smt import paged_refinement

    assert paged_refinement.on_random_states(600, policy=getattr(paged_step, wrong)()).difference is not None
    assert paged_refinement.on_random_states(600, factory=getattr(faults, wrong)).difference is not None
