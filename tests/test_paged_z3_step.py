"""The paged design's Z3 step theorems (`proofs.smt.paged_step`): BLOCKS, TOKENS-KEPT, RECOMPUTE,
PREEMPT-ORDER, PREEMPT-BOUND, TERMINATION (the ranking function under preemption) and the whole
invariant hold over a symbolic paged step; each is refuted on the wrong policy that makes its
fault's mistake (named as the fault in stallfree.faults.paged); and the hypothesis reaches
preempting steps and re-admissions, so no theorem holds vacuously."""

from __future__ import annotations

import pytest

z3 = pytest.importorskip("z3")

from stallfree.faults.paged import PAGED_FAULTS  # noqa: E402
from stallfree.proofs.paged_suite import z3_rows  # noqa: E402
from stallfree.proofs.smt import paged_step  # noqa: E402
from stallfree.spec.verdict import Verdict  # noqa: E402

N = 2  # symbolic requests in CI (the published rows use 3): enough for a preemption beside the oldest


@pytest.mark.parametrize("theorem", paged_step.THEOREMS, ids=lambda t: t.name)
def test_the_paged_step_theorem_holds(theorem: paged_step.PagedTheorem) -> None:
    outcome = paged_step.prove(theorem, None, N)
    assert outcome.verdict is Verdict.HOLDS, outcome


def test_PAGED_INIT_a_new_scheduler_satisfies_the_invariant() -> None:
    assert paged_step.prove_init(N).verdict is Verdict.HOLDS


@pytest.mark.parametrize("theorem", paged_step.THEOREMS, ids=lambda t: t.name)
def test_the_paged_step_theorem_fails_on_its_control(theorem: paged_step.PagedTheorem) -> None:
    outcome = paged_step.prove(theorem, theorem.control(), N)
    assert outcome.verdict is Verdict.BROKEN and "block_size" in outcome.counterexample, outcome


def test_each_control_is_named_after_a_paged_fault_of_its_rule() -> None:
    faults = {f.__name__: f.breaks for f in PAGED_FAULTS}
    for theorem in paged_step.THEOREMS:
        assert theorem.control.__name__ in faults, theorem.control.__name__


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


def test_prove_fault_PREEMPT_BOUND_refutes_TERMINATION_through_the_paged_rows() -> None:
    rows = z3_rows("PREEMPT-BOUND")
    assert {(r.claim, r.result) for r in rows} == {("PREEMPT-BOUND", Verdict.BROKEN), ("TERMINATION", Verdict.BROKEN)}


def test_Z3_PAGED_STEP_equals_the_paged_scheduler_on_random_states_with_preemption() -> None:
    from stallfree.proofs.smt import paged_refinement

    found = paged_refinement.on_random_states(200)
    assert found.difference is None, found.difference
    assert found.states >= 200 and found.preempting >= 5  # preempting steps are compared, not only calm ones


@pytest.mark.parametrize("wrong", ["PreemptOldest", "RecomputeOneMore", "LeakOnEnd", "OverRun", "RequeueAtBack"])
def test_the_paged_differential_tells_a_wrong_policy_or_fault_apart(wrong: str) -> None:
    """Both ways: the Z3 policy making the fault's mistake against the code, and the fault's code
    against the Z3 paged step."""
    from stallfree.faults import paged as faults
    from stallfree.proofs.smt import paged_refinement

    assert paged_refinement.on_random_states(600, policy=getattr(paged_step, wrong)()).difference is not None
    assert paged_refinement.on_random_states(600, factory=getattr(faults, wrong)).difference is not None
