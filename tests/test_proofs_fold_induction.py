"""FOLD (induction, any N): each phase of the policy is the in-order fold of its one-request run for
every N (`proofs/smt/fold_induction.py`), from the frame of its loop body (`fold_frame.py`). It holds of
the reference and of every wrong policy that keeps its phases loops over one request; it fails on a
policy that visits requests in another order (LifoAdmission) or reads one beyond request i (the
look-aheads of `fold_peek.py`): BROKEN where a fixed N refutes it, unknown where none tried does,
never holds; and a body that steps outside its frame in any other way proves nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
import z3

from stallfree.proofs import suite
from stallfree.proofs.smt import chain, fold_frame, fold_induction, induction
from stallfree.proofs.smt.fold import fold
from stallfree.proofs.smt.fold_peek import EarlyPeek, FarPeek, LatePeek
from stallfree.proofs.smt.induction import _prove
from stallfree.proofs.smt.mutants import MUTANTS, LifoAdmission
from stallfree.proofs.smt.policy import Draft, Policy
from stallfree.proofs.smt.symbolic import SymState
from stallfree.spec.verdict import Verdict

PHASES = ("plan_decodes", "plan_partials", "admit")


def test_each_phase_of_the_reference_is_a_fold_for_any_n() -> None:
    out = fold_induction.prove()
    assert out.verdict is Verdict.HOLDS, out.detail
    assert list(out.phases) == list(PHASES)
    assert all(why == "holds: initiation, consecution, exit" for why in out.phases.values()), out.phases


@pytest.mark.parametrize("name", sorted(set(MUTANTS) - {"LifoAdmission"}))
def test_a_wrong_policy_that_keeps_its_phases_loops_over_one_request_is_a_fold(name: str) -> None:
    """SkipAhead breaks FCFS, not FOLD: it is a fold, and the FCFS chain refutes it."""
    out = fold_induction.prove(MUTANTS[name]())
    assert out.verdict is Verdict.HOLDS, out.detail


def test_newest_first_admission_is_refuted() -> None:
    out = fold_induction.prove(LifoAdmission())
    assert out.verdict is Verdict.BROKEN, out.detail
    assert out.phases["plan_decodes"].startswith("holds") and out.phases["admit"].startswith("broken")
    assert "closure" in out.phases["admit"] and "FOLD: admit (N=2) refuted" in out.phases["admit"]
    assert out.counterexample is not None and out.counterexample["values"]


@pytest.mark.parametrize(("policy", "n"), [(EarlyPeek, 2), (LatePeek, 4)], ids=lambda x: getattr(x, "__name__", x))
def test_a_look_ahead_is_refused_by_the_frame_and_refuted_at_a_fixed_n(policy: type[Policy], n: int) -> None:
    out = fold_induction.prove(policy())
    assert out.verdict is Verdict.BROKEN, out.detail
    assert "reads the state's 'requests'" in out.phases["admit"]
    assert f"FOLD: admit (N={n}) refuted" in out.phases["admit"]


def test_a_look_ahead_past_three_passes_the_chained_theorems_fixed_n_premise() -> None:
    """What the any-N row adds: LatePeek is a fold at N = 3, the premise the chained rows check."""
    assert _prove([fold(LatePeek(), "admit", 3)], "FOLD", LatePeek(), 30_000).verdict is Verdict.HOLDS


def test_a_look_ahead_past_every_n_tried_is_unknown_never_holds() -> None:
    out = fold_induction.prove(FarPeek())
    assert out.verdict is Verdict.UNKNOWN, out.detail
    assert "reads the state's 'requests'" in out.phases["admit"] and "nothing proved" in out.phases["admit"]


class DecodesByPosition(Policy):
    """Decodes only the ready requests among the first 12 indexes: a fold at every N below 13."""

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            take = z3.And(r.ready, d.left > 0, i < 12)
            d.decode[i] = take
            d.left = d.let("left", z3.If(take, d.left - 1, d.left))


class RemembersTheLast(Policy):
    """Keeps the request it decoded last on itself: state carried outside the draft."""

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            self.last = r
            d.decode[i] = z3.And(r.ready, d.left > 0)
            d.left = d.let("left", z3.If(d.decode[i], d.left - 1, d.left))


class CountsLets(Policy):
    """Stops decoding once 30 named terms are made: it counts the iterations before it."""

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            d.decode[i] = z3.And(r.ready, d.left > 0, z3.BoolVal(len(d.defs) < 30))
            d.left = d.let("left", z3.If(d.decode[i], d.left - 1, d.left))


class BranchesOnTheBudget(Policy):
    """Decides in Python, on the term it is handed: the same for every run only by luck."""

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            d.decode[i] = r.ready if d.left == s.config.token_budget else z3.BoolVal(False)


class ReadsItsLocals(Policy):
    """Carries the last decision in a local, read back through locals()."""

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            d.decode[i] = z3.And(r.ready, locals().get("took", z3.BoolVal(True)))
            took = d.decode[i]


@pytest.mark.parametrize(("policy", "why"), [
    (DecodesByPosition, "uses its index i as a value"),
    (RemembersTheLast, "changes the policy's own attributes"),
    (CountsLets, "reads d.defs"),
    (BranchesOnTheBudget, "branches in Python on the symbolic value"),
    (ReadsItsLocals, "holds locals"),
], ids=lambda x: getattr(x, "__name__", "why"))
def test_a_body_outside_its_frame_proves_nothing(policy: type[Policy], why: str) -> None:
    out = fold_induction.prove(policy())
    assert out.verdict is not Verdict.HOLDS, out.detail
    assert why in out.phases["plan_decodes"], out.phases
    assert out.phases["plan_partials"].startswith("holds")  # the phases it keeps are still proved


def test_the_consecution_fails_when_the_iteration_is_not_the_phase_on_one_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Z3 step can fail: an iteration that leaves one token more than the phase does is caught."""
    honest = fold_frame.iteration

    def off_by_one(*args: object) -> fold_frame.Iteration:
        t = honest(*args)  # type: ignore[arg-type]
        return replace(t, carried=(t.carried[0] + 1, *t.carried[1:]))

    monkeypatch.setattr(fold_induction, "iteration", off_by_one)
    result = _prove(fold_induction.obligations(Policy(), "plan_decodes"), "x", Policy(), 30_000)
    assert result.verdict is Verdict.BROKEN and result.counterexample["obligation"] == "plan_decodes: consecution"


def test_prove_has_the_row_and_names_the_phase_that_fails() -> None:
    said: list[str] = []
    row = suite.fold_row(suite.Options(policy=LatePeek()), said.append)
    assert (row.claim, row.bound, row.result) == ("FOLD (induction, any N)", "any N", Verdict.BROKEN)
    assert "admit broken" in row.detail and "counterexample state" in row.detail
    assert said == ["z3: FOLD (induction, any N) (LatePeek)"]
    assert suite.fold_row(suite.Options(), said.append).result is Verdict.HOLDS


def test_the_loop_inductions_prove_their_fold_premise_for_any_n() -> None:
    """Each row with FOLD at N = 3 also discharges its phases' any-N obligations, right after it; a
    look-ahead past three, which N = 3 lets through, is then judged by none of them."""
    admits = next(loop for loop in induction.INDUCTIONS if loop.name.startswith("ADMITS"))
    chained = chain.CHAINS[0]
    names = [ob.name for ob in fold_induction.with_any_n(Policy(), chained.obligations(Policy()))]
    assert names[:4] == ["FOLD: plan_decodes (N=3)", "FOLD: plan_partials (N=3)", "FOLD: admit (N=3)",
                         "FOLD (any N): plan_decodes: initiation"]
    assert "FOLD (any N): admit: consecution" in names
    for loop in (admits, chained):
        result = induction.prove_induction(loop, LatePeek())
        assert result.verdict is Verdict.UNKNOWN, loop.name
        assert result.counterexample["obligation"] == "FOLD: admit (N=4)" and "premise" in result.counterexample


def test_a_phase_outside_its_frame_adds_a_fixed_n_premise_only() -> None:
    obs = fold_induction.premises(LifoAdmission(), "admit")
    assert [ob.name for ob in obs] == ["FOLD: admit (N=2)", "FOLD: admit (N=4)"] and all(ob.premise for ob in obs)


class SwapsItsDraft(Policy):
    """Plans into a fresh draft from the second request on: what the loop carries is no longer d."""

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            d.decode[i] = z3.And(r.ready, d.left > 0)
            d = Draft(s)


def test_a_body_that_rebinds_its_draft_is_refused_from_the_source() -> None:
    with pytest.raises(fold_frame.FrameError, match="a rebinding of d"):
        fold_frame.loop_body(SwapsItsDraft().plan_decodes)
