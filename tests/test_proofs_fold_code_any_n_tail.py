"""FOLD (code, induction, any N) on the reference's partial prompts: a `for` over `_running`'s tail past
the ready ones, standing alone in a guard that the tail is not empty (`code_phases`). The frame reads
that shape only: the tail's count `len(self._running) - R`, R an earlier phase's count (or a local bound
once to it), and the guard `len(self._running) > R` with the same R. Each control uses the shape wrongly
(`code_fold_planted.TAIL_CONTROLS`): the frame refuses it, and FOLD (code) at N <= 4 refutes it
(BROKEN) or finds nothing (unknown, nothing proved): never holds."""

from __future__ import annotations

import inspect
import textwrap

import pytest

from stallfree.proofs.smt.code_fold_induction import prove
from stallfree.proofs.smt.code_fold_planted import (
    GUARD,
    GuardPastOnePartial,
    NewestFirstPartials,
    ReadyCountRebound,
    SkipsTheOldestPartial,
    TailPastThePartials,
    planted,
)
from stallfree.proofs.smt.code_phases import read
from stallfree.proofs.smt.fold_frame import FrameError
from stallfree.reference import Scheduler
from stallfree.spec.verdict import Verdict

NOT_A_COUNT = "no count of a container a phase before walks (nor a local bound once to one, after the last phase)"


def test_the_reference_partial_prompts_are_a_guarded_tail_read_as_a_fold() -> None:
    tail = next(p for p in read(Scheduler).phases if p.kind == "for")
    assert (tail.walked, tail.tail, tail.guarded) == ("_running", True, True), tail
    assert prove(Scheduler).verdict is Verdict.HOLDS


def _unguarded() -> type:
    """The reference with its tail's guard taken away (the loop set up on every step)."""
    source = textwrap.dedent(inspect.getsource(Scheduler.schedule))
    block = source[source.index(GUARD):source.index("    # 3.")]
    return planted("UnguardedTail", "The partial prompts' loop set up on every step.",
                   ((block, textwrap.indent(textwrap.dedent(block[len(GUARD):]), "    ")),))


def test_the_tail_without_its_guard_is_read_and_holds_too() -> None:
    cls = _unguarded()
    tail = next(p for p in read(cls).phases if p.kind == "for")
    assert (tail.tail, tail.guarded) == (True, False), tail
    assert prove(cls).verdict is Verdict.HOLDS


@pytest.mark.parametrize(("cls", "why", "verdict"), [
    (NewestFirstPartials, "is no `for x in self.C.values():` without else", Verdict.UNKNOWN),
    (TailPastThePartials, f"subtracts num_ready - 1, {NOT_A_COUNT}", Verdict.BROKEN),
    (SkipsTheOldestPartial, f"subtracts num_ready + 1, {NOT_A_COUNT}", Verdict.UNKNOWN),
    (GuardPastOnePartial, "the guard `if len(self._running) > num_ready + 1:` of `for seq in", Verdict.UNKNOWN),
    (ReadyCountRebound, f"subtracts num_ready, {NOT_A_COUNT}", Verdict.BROKEN),
], ids=lambda x: getattr(x, "__name__", str(x)))
def test_the_guarded_tail_used_wrongly_is_refused_and_never_holds(cls: type, why: str, verdict: Verdict) -> None:
    """Newest first, a skipped oldest partial or a guard past one partial differ from the reference only
    with two partial prompts, which no state the post-conditions allow holds (ONE-PARTIAL): FOLD (code)
    finds nothing, and the row reads unknown; a tail taking a ready request too is refuted at N = 2."""
    with pytest.raises(FrameError) as refused:
        read(cls)
    assert why in str(refused.value), refused.value
    out = prove(cls)
    assert out.verdict is verdict, out.detail
    assert ("at N=2 refuted" if verdict is Verdict.BROKEN else "nothing proved") in out.detail, out.detail


GuardOnAMap = planted("GuardOnAMap", "The decodes planned only while one is ready.", (
    ("    entries = list(self._ready.values())\n",
     "    entries = []\n    if len(self._ready) > 0:\n        for decode in self._ready.values():\n"
     "            entries.append(decode)\n"),))


def test_a_guard_around_a_loop_other_than_a_tail_is_refused() -> None:
    with pytest.raises(FrameError, match="guards a loop that is no tail `for`"):
        read(GuardOnAMap)
    assert prove(GuardOnAMap).verdict is not Verdict.HOLDS
