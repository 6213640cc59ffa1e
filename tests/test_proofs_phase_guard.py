"""The guard of the policy-level induction rows (`proofs.smt.phase_guard`), from the third review of
LIVENESS (induction, any N): a policy whose `phases()` are not its own methods of their names, whose
phase writes another's plan entry, or whose `initial()` is its own, never reads holds (each read holds,
or crashed, before); a correct step run through another instance's method does not read BROKEN. Each
plant (`phase_planted`) is shown wrong on its own step (the fixed-N LIVENESS-STEPS refutation) or on its
own first state (the INIT theorem), and the guard passes the reference."""

from __future__ import annotations

import pytest

from stallfree.proofs import suite
from stallfree.proofs.smt import induction, liveness_any_n, liveness_induction, phase_guard
from stallfree.proofs.smt.chain import CHAINS
from stallfree.proofs.smt.phase_planted import CORRECT, PLANTED
from stallfree.proofs.smt.policy import Policy
from stallfree.proofs.smt.theorems import THEOREMS
from stallfree.proofs.smt.theorems import prove as prove_theorem
from stallfree.spec.verdict import Verdict

ROWS = {loop.name: loop for loop in (*induction.INDUCTIONS, *CHAINS)}


def _own_step(policy: Policy) -> Verdict:
    """LIVENESS-STEPS at N = 3 on the policy's own `Policy.step` (what it really runs)."""
    return induction._prove([liveness_induction.refute_at_three(policy)], liveness_any_n.NAME, policy,
                            30_000).verdict


def test_the_guard_passes_the_reference() -> None:
    assert phase_guard.unjudged(Policy()) is None and phase_guard.foreign_writes(Policy()) == {}


@pytest.mark.parametrize(("name", "why"), [
    ("AliasIdle", "not the policy's own method plan_decodes"),
    ("NoPartials", "leaves out 'plan_partials'"),  # a KeyError before
    ("ExtraPhase", "'plan_nothing', a phase no loop"),  # a KeyError before
])
def test_phases_that_are_not_the_methods_judged_are_not_judged(name: str, why: str) -> None:
    outcome = liveness_any_n.prove(PLANTED[name]())
    assert outcome.verdict is Verdict.NOT_JUDGED, (name, outcome.verdict, outcome.detail)
    assert why in outcome.detail
    result = induction.prove_induction(ROWS["PROGRESS (induction)"], PLANTED[name]())
    assert result.verdict is Verdict.NOT_JUDGED and why in (result.counterexample or {})["reason"]


def test_alias_idle_starves_on_its_own_step_while_the_methods_it_names_hold() -> None:
    """The control: the rows ran the class's own plan_decodes (the reference's), so (a) held before."""
    policy = PLANTED["AliasIdle"]()
    assert _own_step(policy) is Verdict.BROKEN
    unguarded = induction._prove(liveness_induction.LIVENESS_INDUCTIONS[0].obligations(policy), "(a)", policy, 30_000)
    assert unguarded.verdict is Verdict.HOLDS


def test_a_correct_step_through_another_instance_is_not_judged_not_broken() -> None:
    policy = CORRECT["SpuriousAlias"]()
    assert _own_step(policy) is Verdict.HOLDS  # its step is the reference's
    unguarded = induction._prove(liveness_induction.LIVENESS_INDUCTIONS[0].obligations(policy), "(a)", policy, 30_000)
    assert unguarded.verdict is Verdict.BROKEN  # what the row read before: its idle method of that name
    assert liveness_any_n.prove(policy).verdict is Verdict.NOT_JUDGED


@pytest.mark.parametrize(("name", "phase", "entry"), [
    ("EraseDecodes", "plan_partials", "d.decode"), ("EraseChunks", "admit", "d.chunk")])
def test_a_phase_writing_another_phases_entry_is_unknown_naming_it(name: str, phase: str, entry: str) -> None:
    policy = PLANTED[name]()
    assert _own_step(policy) is Verdict.BROKEN  # its own step starves
    assert list(phase_guard.foreign_writes(policy)) == [phase]
    outcome = liveness_any_n.prove(policy)
    assert outcome.verdict is Verdict.UNKNOWN, (name, outcome.verdict, outcome.detail)
    assert f"{phase} writes {entry}" in outcome.detail and outcome.counterexample is not None
    for row in ("READY-WITHIN-BUDGET (induction, phases chained)", "PLAN RULES (induction, phases chained)",
                "DECODES (induction)", "PROGRESS (induction)"):
        result = induction.prove_induction(ROWS[row], policy)
        assert result.verdict is Verdict.UNKNOWN and phase in (result.counterexample or {})["foreign writes"], row


def test_erase_decodes_held_on_the_loops_without_the_guard() -> None:
    """The control: every loop of (a) and PROGRESS take the decode entry from the decodes phase only."""
    policy = PLANTED["EraseDecodes"]()
    for loop in (liveness_induction.LIVENESS_INDUCTIONS[0], ROWS["PROGRESS (induction)"]):
        assert induction._prove(loop.obligations(policy), loop.name, policy, 30_000).verdict is Verdict.HOLDS


def test_an_own_initial_is_not_judged_and_the_init_theorem_refutes_it() -> None:
    policy = PLANTED["InitialDrained"]()
    outcome = liveness_any_n.prove(policy)
    assert outcome.verdict is Verdict.NOT_JUDGED and "overrides initial()" in outcome.detail
    init = next(t for t in THEOREMS if t.name == "INIT")
    assert prove_theorem(init, policy).verdict is Verdict.BROKEN  # its own first state, at fixed N
    assert prove_theorem(init, Policy()).verdict is Verdict.HOLDS


@pytest.mark.parametrize(("name", "verdict", "said"), [
    ("EraseDecodes", Verdict.UNKNOWN, "plan_partials writes d.decode"),
    ("AliasIdle", Verdict.NOT_JUDGED, "not the policy's own method plan_decodes")])
def test_stallfree_prove_prints_why_the_guard_stopped_the_row(name: str, verdict: Verdict, said: str) -> None:
    """The suite's row says the guard's reason, not "the solver ran out of time"."""
    o = suite.Options(policy=PLANTED[name]())
    row = dict(suite.z3_parts(o))["z3 PROGRESS (induction)"](o, lambda _: None)[0]
    assert row.result is verdict and said in row.detail and "ran out of time" not in row.detail


def test_a_phase_outside_the_frame_is_read_at_the_n_its_fold_is_checked_at() -> None:
    """EraseDecodesOutsideFrame's partials are refused by FOLD's frame, so one iteration cannot be read:
    the guard reads its overwrite off the step on 1 to 4 requests, FOLD's own fallback N."""
    from stallfree.proofs.smt.fold_induction import REFUTE_UP_TO, refused

    assert phase_guard.REFUSED_UP_TO == REFUTE_UP_TO
    policy = PLANTED["EraseDecodesOutsideFrame"]()
    assert "plan_partials" in refused(policy)  # the control: the frame refuses it
    assert list(phase_guard.foreign_writes(policy)) == ["plan_partials"]
    assert liveness_any_n.prove(policy).verdict is Verdict.UNKNOWN
    result = induction.prove_induction(ROWS["DECODES (induction)"], policy)
    assert result.verdict is Verdict.UNKNOWN and "plan_partials" in (result.counterexample or {})["foreign writes"]


def test_a_mutable_attribute_puts_the_phase_outside_folds_frame() -> None:
    """CountingIdle counts iterations in a class-level list, the same object after each: the frame's
    identity check passed it, so the row held; now the frame refuses its phases."""
    from stallfree.proofs.smt.fold_induction import refused

    policy = PLANTED["CountingIdle"]()
    why = refused(policy)
    assert list(why) == ["plan_decodes", "plan_partials", "admit"]  # the attribute is every phase's to change
    assert all("CountingIdle.seen is a mutable list" in reason for reason in why.values())
    assert refused(Policy()) == {}
    # unknown (the frame refuses it) while the process has run fewer than 40 of its iterations, BROKEN
    # (its own step at N = 3 idles) after: never holds
    assert liveness_any_n.prove(policy).verdict in (Verdict.UNKNOWN, Verdict.BROKEN)
