"""FOLD (code, induction, any N) against schedulers that tell the frame from a real run or change what it
reads beside the loop bodies (`code_fold_planted_frame`): each is a fold on every state of three
requests, so FOLD (code) at N = 3 holds of it (the control: the row's own check at one N misses it);
the frame refuses what each uses, so the row never holds: BROKEN where FOLD (code) at N = 4 refutes it."""

from __future__ import annotations

import pytest

from stallfree.proofs.smt import code_fold
from stallfree.proofs.smt.code_fold_induction import prove
from stallfree.proofs.smt.code_fold_planted_frame import (
    AdmitDropsPlan,
    ConcreteOnly,
    MatchInt,
    RunningLenLies,
    RunningSubclass,
    SelfIsScheduler,
    TailDropsDecodes,
)
from stallfree.spec.verdict import Verdict

REFUSED = [
    (TailDropsDecodes, "binds the plan list entries again", Verdict.BROKEN),
    (AdmitDropsPlan, "binds the plan list entries again", Verdict.BROKEN),
    (SelfIsScheduler, "names the global isinstance", Verdict.UNKNOWN),
    (ConcreteOnly, "names the global isinstance", Verdict.UNKNOWN),
    (MatchInt, "holds Match", Verdict.UNKNOWN),
    (RunningSubclass, "is no `for x in self.C.values():`", Verdict.BROKEN),
    (RunningLenLies, "is no `for x in self.C.values():`", Verdict.BROKEN),
]


@pytest.mark.parametrize(("cls", "why", "verdict"), REFUSED, ids=lambda x: getattr(x, "__name__", ""))
def test_what_tells_the_frame_from_a_run_is_refused_and_never_holds(cls: type, why: str, verdict: Verdict) -> None:
    out = prove(cls)
    assert out.verdict is verdict, out.detail
    assert why in out.detail, out.detail


@pytest.mark.parametrize("cls", [TailDropsDecodes, AdmitDropsPlan, SelfIsScheduler, RunningSubclass],
                         ids=lambda c: c.__name__)
def test_control_each_is_a_fold_on_three_requests(cls: type) -> None:
    """FOLD (code) at N = 3 holds: the row's check at one N does not catch them; the frame's refusal does."""
    assert code_fold.prove(cls, 3).verdict is Verdict.HOLDS
