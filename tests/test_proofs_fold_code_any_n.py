"""FOLD (code, induction, any N): each phase loop of the reference's own schedule(), read from its
source, is the in-order fold of that loop run on one request, for every N (`code_fold_induction`,
`code_frame`, `code_phases`). It holds of the reference; on a copy with a bug planted in a loop
(`code_fold_planted`) the frame refuses the loop and FOLD (code) at a fixed N refutes schedule()
(BROKEN), or, where none tried does, the row reads unknown: never holds. A body that steps outside
its frame in any other way proves nothing, and the consecution can fail."""

from __future__ import annotations

import pytest
import z3

from stallfree.main import main
from stallfree.proofs.code_suite import code_parts
from stallfree.proofs.smt import code_fold_induction
from stallfree.proofs.smt.code_fold_induction import HELD, NAME, prove
from stallfree.proofs.smt.code_fold_planted import (
    LookAheadAdmission,
    NewestFirstAdmission,
    PartialReadsTheLine,
    SkipAheadAdmission,
    planted,
)
from stallfree.proofs.smt.code_frame import probe
from stallfree.proofs.smt.code_phases import read
from stallfree.proofs.smt.fold_planted import EarlyLookAhead
from stallfree.proofs.suite import Options
from stallfree.reference import Scheduler
from stallfree.spec.verdict import Verdict

ADMIT = "        self._waiting.popleft()\n"
PARTIAL_CHUNK = "        n = min(seq.num_remaining_prompt, left)\n"


def _why(cls: type, kind: str) -> str | None:
    """Why `cls`'s phase loop of `kind` ("map", "for", "while") is not proved a fold; None if it is."""
    source = read(cls)
    phase = next(p for p in source.phases if p.kind == kind)
    return code_fold_induction._phase(cls, source, phase, probe(cls), 30_000)


def test_each_phase_loop_of_the_reference_is_a_fold_for_any_n() -> None:
    out = prove(Scheduler)
    assert out.verdict is Verdict.HOLDS, out.detail
    assert [label.split()[0] for label in out.phases] == ["entries", "for", "while"], out.phases
    assert all(why == HELD for why in out.phases.values()), out.phases
    assert out.counterexample is None


def test_a_look_ahead_at_the_second_in_line_is_refused_and_refuted() -> None:
    out = prove(LookAheadAdmission)
    assert out.verdict is Verdict.BROKEN, out.detail
    assert "self._waiting, the line it walks" in out.detail and "at N=2 refuted" in out.detail
    assert out.counterexample is not None and out.counterexample["values"] and out.counterexample["frame"]
    assert [v for label, v in out.phases.items() if label.startswith("for")] == [HELD]  # the loops it keeps


def test_newest_first_admission_is_refused_and_refuted() -> None:
    out = prove(NewestFirstAdmission)
    assert out.verdict is Verdict.BROKEN, out.detail
    assert "takes no one line's head (popleft)" in out.detail and "at N=2 refuted" in out.detail


def test_a_skip_ahead_is_refused_and_a_fold_at_every_n_tried_so_unknown_never_holds() -> None:
    """It breaks FCFS, not FOLD: FOLD (code) at N <= 4 finds nothing, and the row claims nothing."""
    out = prove(SkipAheadAdmission)
    assert out.verdict is Verdict.UNKNOWN, out.detail
    assert "reads self._waiting, a container of requests" in out.detail and "nothing proved" in out.detail


def test_a_partial_loop_reading_another_request_is_refused_and_refuted() -> None:
    out = prove(PartialReadsTheLine)
    assert out.verdict is Verdict.BROKEN, out.detail
    partial = next(v for label, v in out.phases.items() if label.startswith("for"))
    assert partial.startswith("unproved") and "self._waiting: a container of requests" in partial
    assert "at N=2 refuted" in out.detail


def test_a_look_ahead_outside_the_loops_is_refused_and_refuted() -> None:
    """fold_planted's look-ahead reorders the line before calling the reference's schedule()."""
    out = prove(EarlyLookAhead)
    assert out.verdict is Verdict.BROKEN and "is a closure" in out.detail, out.detail


Unbound = planted("Unbound", "On a huge budget, reads the chunk the iteration before left in n.", (
    ("        n = min(seq.request.prompt_len, left)\n",
     "        n = min(seq.request.prompt_len, n if left > 10**9 else left)\n"),))
RoundWithoutTaking = planted("RoundWithoutTaking", "Goes round without taking the head on a huge budget.", (
    (ADMIT, "        if left > 1000:\n            continue\n" + ADMIT),))
ReadsTheWalkedCount = planted("ReadsTheWalkedCount", "Caps a partial chunk by the number of partials.", (
    (PARTIAL_CHUNK, "        n = min(seq.num_remaining_prompt, left, 8 * len(self._partial))\n"),))
RidAsValue = planted("RidAsValue", "Gives the first rids a chunk of one.", (
    (PARTIAL_CHUNK, "        n = min(seq.num_remaining_prompt, left) if seq.rid > 2 else 1\n"),))
RidEquals = planted("RidEquals", "Gives rid 0 a chunk of one.", (
    (PARTIAL_CHUNK, "        n = min(seq.num_remaining_prompt, left) if seq.rid != 0 else 1\n"),))
ChangesItsSequence = planted("ChangesItsSequence", "Rewrites its own progress.", (
    (PARTIAL_CHUNK, PARTIAL_CHUNK + "        seq.num_prefilled = seq.num_prefilled + 0\n"),))
HoldsOnAnEmptyLine = planted("HoldsOnAnEmptyLine", "Tests its line only while the budget is small.", (
    ("    while left and self._waiting and", "    while left and (self._waiting or left > 10**9) and"),))
ReadsTheLive = planted("ReadsTheLive", "Admits only a request it finds among the live ones.", (
    (ADMIT, "        if self._live.get(seq.rid) is None:\n            break\n" + ADMIT),))


@pytest.mark.parametrize(("cls", "kind", "why"), [
    (Unbound, "while", "raises UnboundLocalError"),
    (RoundWithoutTaking, "while", "goes round without taking its request"),
    (ReadsTheWalkedCount, "for", "the container its loop walks"),
    (RidAsValue, "for", "uses its request's rid as a value"),
    (RidEquals, "for", "uses its request's rid as a value (__ne__)"),
    (ChangesItsSequence, "for", "changes its own request's sequence"),
    (HoldsOnAnEmptyLine, "while", "its test can hold, or move a carried value, with self._waiting empty"),
    (ReadsTheLive, "while", "reads self._live: a container of requests no phase before this one walks"),
], ids=lambda x: getattr(x, "__name__", str(x)))
def test_a_body_outside_its_frame_proves_nothing(cls: type, kind: str, why: str) -> None:
    found = _why(cls, kind)
    assert found is not None and why in found, found
    assert _why(cls, "map") is None  # the phases it keeps are still proved


def test_a_loop_rewritten_in_a_shape_the_frame_reads_is_still_proved() -> None:
    """The frame is about the loops, not the reference's spelling: decodes as a `for` hold too."""
    loop = planted("DecodesAsALoop", "Plans the decodes one by one.", (
        ("    entries = list(self._ready.values())\n    left -= len(entries)\n",
         "    entries = []\n    for decode in self._ready.values():\n        entries.append(decode)\n"
         "        left -= 1\n"),))
    out = prove(loop)
    assert out.verdict is Verdict.HOLDS, out.detail
    assert [label.split()[0] for label in out.phases] == ["for", "for", "while"], out.phases


def test_the_consecution_fails_when_the_iteration_is_not_the_loop_on_one_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Z3 step can fail: an iteration that leaves one token more than the loop does is caught."""
    honest = code_fold_induction.terms

    def one_more(*args: object) -> dict[str, z3.ExprRef]:
        out = honest(*args)  # type: ignore[arg-type]
        return {**out, "local.left": out["local.left"] + 1} if args[-1] == "T" else out

    monkeypatch.setattr(code_fold_induction, "terms", one_more)
    found = _why(Scheduler, "for")
    assert found is not None and "consecution: the iteration and the loop run on one request differ" in found


def test_prove_has_the_row() -> None:
    part = dict(code_parts(Options()))[f"symbolic {NAME}"]
    said: list[str] = []
    (row,) = part(Options(), said.append)
    assert (row.claim, row.bound, row.result) == (NAME, "any N", Verdict.HOLDS), row.detail
    assert said and NAME in said[0]
    (broken,) = part(Options(factory=PartialReadsTheLine), said.append)
    assert broken.result is Verdict.BROKEN and "at N=2 refuted" in broken.detail


def test_prove_scheduler_exits_1_on_a_partial_loop_reading_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "stallfree.proofs.smt.code_fold_planted:PartialReadsTheLine"
    assert main(["prove", "--methods", "symbolic", "--code-requests", "1", "--scheduler", spec]) == 1
    out = capsys.readouterr().out
    row = [line for line in out.splitlines() if line.startswith(NAME)]
    assert row and "BROKEN" in row[0], out
