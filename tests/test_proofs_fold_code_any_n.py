"""FOLD (code, induction, any N): each phase loop of the reference's own schedule(), read from its
source, is the in-order fold of that loop run on one request, for every N (`code_fold_induction`,
`code_frame`, `code_phases`). It holds of the reference; on a copy with a bug planted in a loop
(`code_fold_planted`) the frame refuses the loop and FOLD (code) at a fixed N refutes schedule()
(BROKEN), or, where none tried does, the row reads unknown: never holds. A body that steps outside
its frame in any other way proves nothing, and the consecution can fail."""

from __future__ import annotations

import dataclasses
import itertools
from collections import OrderedDict
from typing import Any

import pytest
import z3

from stallfree.commands.timed import Watch
from stallfree.main import main
from stallfree.proofs.code_suite import code_parts
from stallfree.proofs.smt import code_fold, code_fold_induction
from stallfree.proofs.smt.code_fold_induction import HELD, NAME, prove
from stallfree.proofs.smt.code_fold_planted import (
    HEAD,
    LookAheadAdmission,
    NewestFirstAdmission,
    PartialPeeksAtTwelve,
    PartialPeeksTheLine,
    PartialReadsHead,
    PartialReadsTheLine,
    PullReadyAtFour,
    PullReadyAtNine,
    SkipAheadAdmission,
    planted,
)
from stallfree.proofs.smt.code_frame import probe
from stallfree.proofs.smt.code_phases import attribute_kinds, read
from stallfree.proofs.smt.fold_frame import FrameError
from stallfree.proofs.smt.fold_planted import EarlyLookAhead
from stallfree.proofs.suite import Options
from stallfree.reference import Scheduler
from stallfree.reference.step import Step
from stallfree.spec.verdict import Verdict

ADMIT = "        rid, seq = self._waiting.popitem(last=False)\n"
WHILE = "    while left and self._waiting"
PLAN = "    plan = "  # the line that builds the plan (`plan = step.plan = Plan(...)`)
PARTIAL_CHUNK = "            n = min(seq.num_remaining_prompt, left)\n"
TAIL_HELD = (f"{HELD} (its tail's count, len(self._running) - num_ready, read, not proved: it is the "
             "requests of self._running not counted by num_ready, an earlier phase's, if that phase's are the first "
             "of self._running, the reference's post-condition ready_first)")  # what the partial loop's tail rests on


def _why(cls: type, kind: str) -> str | None:
    """Why `cls`'s phase loop of `kind` ("map", "for", "while") is not proved a fold; None if it is."""
    source = read(cls)
    phase = next(p for p in source.phases if p.kind == kind)
    return code_fold_induction._phase(cls, source, phase, probe(cls), 30_000)


def test_each_phase_loop_of_the_reference_is_a_fold_for_any_n() -> None:
    out = prove(Scheduler)
    assert out.verdict is Verdict.HOLDS, out.detail
    assert [label.split()[0] for label in out.phases] == ["entries", "for", "while", "schedule()"], out.phases
    assert [why for label, why in out.phases.items() if label != "schedule()"] == [HELD, TAIL_HELD, HELD], out.phases
    assert out.phases["schedule()"] == "FOLD (code) at N=3 holds too"  # the belt: the row holds only with it
    assert out.counterexample is None


def test_a_look_ahead_at_the_second_in_line_is_refused_and_refuted() -> None:
    out = prove(LookAheadAdmission)
    assert out.verdict is Verdict.BROKEN, out.detail
    assert "self._waiting, the line it walks" in out.detail and "at N=2 refuted" in out.detail
    assert out.counterexample is not None and out.counterexample["values"] and out.counterexample["frame"]
    assert [v for label, v in out.phases.items() if label.startswith("for")] == [TAIL_HELD]  # the loops it keeps


def test_newest_first_admission_is_refused_and_refuted() -> None:
    out = prove(NewestFirstAdmission)
    assert out.verdict is Verdict.BROKEN, out.detail
    assert "takes no one line's head (popleft)" in out.detail and "at N=2 refuted" in out.detail


def test_a_skip_ahead_is_refused_and_a_fold_at_every_n_tried_so_unknown_never_holds() -> None:
    """It breaks FCFS, not FOLD: FOLD (code) at N <= 4 finds nothing, and the row claims nothing."""
    out = prove(SkipAheadAdmission)
    assert out.verdict is Verdict.UNKNOWN, out.detail
    assert "`passed.update(self._waiting)` outside the phase loops" in out.detail
    assert "nothing proved" in out.detail


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
    (PARTIAL_CHUNK, "            n = min(seq.num_remaining_prompt, left, 8 * len(self._running))\n"),))
RidAsValue = planted("RidAsValue", "Gives the first rids a chunk of one.", (
    (PARTIAL_CHUNK, "            n = min(seq.num_remaining_prompt, left) if seq.rid > 2 else 1\n"),))
RidEquals = planted("RidEquals", "Gives rid 0 a chunk of one.", (
    (PARTIAL_CHUNK, "            n = min(seq.num_remaining_prompt, left) if seq.rid != 0 else 1\n"),))
ChangesItsSequence = planted("ChangesItsSequence", "Rewrites its own progress.", (
    (PARTIAL_CHUNK, PARTIAL_CHUNK + "            seq.num_prefilled = seq.num_prefilled + 0\n"),))
HoldsOnAnEmptyLine = planted("HoldsOnAnEmptyLine", "Tests its line only while the budget is small.", (
    ("    while left and self._waiting and", "    while left and (self._waiting or left > 10**9) and"),))
ReadsTheCalendar = planted("ReadsTheCalendar", "Stops admitting if a request is due to finish before step 0.", (
    (ADMIT, "        if self._finishing.get(-1):\n            break\n" + ADMIT),))


TAIL_COUNT = "len(self._running) - num_ready)"
TailCountsTheLine = planted("TailCountsTheLine", "Takes as many partial prompts as wait in line.", (
    (TAIL_COUNT, "min(len(self._running) - num_ready + len(self._waiting), len(self._running)))"),))
TailCountsACall = planted("TailCountsACall", "Takes the partial prompts through a method's count.", (
    (TAIL_COUNT, "self._running.__len__() - num_ready)"),))


@pytest.mark.parametrize(("cls", "why"), [
    (TailCountsTheLine, "reads self._waiting, a container of requests"),
    (TailCountsACall, "reads the dunder __len__"),
], ids=lambda x: getattr(x, "__name__", "why"))
def test_a_tail_whose_count_reads_outside_the_straight_line_shape_is_refused(cls: type, why: str) -> None:
    """The partial prompts' `for` walks `_running`'s tail; the count that picks it is read as a straight-line
    expression, which may count `_running` and the containers walked before, and nothing else."""
    with pytest.raises(FrameError, match="`for seq in reversed") as refused:
        read(cls)
    assert why in str(refused.value), refused.value
    read(Scheduler)  # the reference's own count is read


TailCountsOneMore = planted("TailCountsOneMore", "Takes the newest ready one as a partial too.", (
    (TAIL_COUNT, "len(self._running) - num_ready + 1)"),))
TailCountsItself = planted("TailCountsItself", "Takes no partial prompt: the count of its own container subtracted.", (
    (TAIL_COUNT, "len(self._running) - len(self._running))"),))


@pytest.mark.parametrize("cls", [PullReadyAtFour, PullReadyAtNine, TailCountsOneMore, TailCountsItself],
                         ids=lambda c: c.__name__)
def test_a_tail_count_in_the_straight_line_shape_but_not_past_an_earlier_walk_is_refused(cls: type) -> None:
    """The count is held to `len(self.C) - R`, R the count of a container a phase before walks: a count that
    only passes the straight-line shape (right on every state of three requests) could pick a ready request."""
    with pytest.raises(FrameError, match=r"'s tail (is no `len\(self._running\) - R`|subtracts len\(self._running\))"):
        read(cls)
    (tail,) = [p for p in read(Scheduler).phases if p.tail]
    assert (tail.walked, tail.past) == ("_running", "num_ready")  # the reference's count: past the ready ones


def test_a_tail_that_takes_a_ready_request_from_four_running_is_refuted_at_four() -> None:
    """PullReadyAtFour is right on every state of at most three requests (FOLD (code) at N=3 holds of
    it): before the count was checked, the row held of it. Now it is refused, and refuted at N=4."""
    out = prove(PullReadyAtFour)
    assert out.verdict is Verdict.BROKEN, out.detail
    assert "at N=4 refuted" in out.detail and "(2, 1), (2, 0)" in out.detail, out.detail


def test_a_tail_that_takes_a_ready_request_from_nine_running_never_holds() -> None:
    """Past every N the row tries (and past the stepped runs' S <= 8): refused, so unknown, not holds."""
    out = prove(PullReadyAtNine)
    assert out.verdict is Verdict.UNKNOWN, out.detail
    assert "its tail is not _running past an earlier phase's requests" in out.detail and "nothing proved" in out.detail


def test_the_probe_shows_each_kind_of_request_a_container_holds() -> None:
    """`_running` holds ready requests (first-token step set) and partial ones (None): both are probed."""
    kinds = probe(Scheduler)
    assert [kind.sequence.first_token_step is None for kind in kinds["_running"]] == [False, True]
    assert len(kinds["_waiting"]) == len(kinds["_ready"]) == 1


@pytest.mark.parametrize(("cls", "verdict", "at"), [
    (PartialPeeksTheLine, Verdict.BROKEN, "at N=4 refuted"),
    (PartialReadsHead, Verdict.BROKEN, "at N=4 refuted"),
    (PartialPeeksAtTwelve, Verdict.UNKNOWN, "not refuted at N <= 4: nothing proved"),
], ids=lambda x: getattr(x, "__name__", str(x)))
def test_a_branch_only_a_partial_takes_is_run_in_the_frame(cls: type, verdict: Verdict, at: str) -> None:
    """A look-ahead at the line under `seq.first_token_step is None`: the partial loop's body runs on a
    partial request too, so it is seen reading the line; never holds."""
    out = prove(cls)
    assert out.verdict is verdict, out.detail
    partial = next(v for label, v in out.phases.items() if label.startswith("for"))
    assert partial.startswith("unproved") and "reads self._waiting" in partial, partial
    assert at in out.detail, out.detail


def test_probing_a_ready_request_alone_misses_the_partial_branch() -> None:
    """The control of the test above: with the frame's request taken from `_running`'s first value alone
    (a ready one, as before), the partial loop of PartialPeeksAtTwelve reads a fold."""
    source = read(PartialPeeksAtTwelve)
    phase = next(p for p in source.phases if p.tail)
    first_only = {name: kinds[:1] for name, kinds in probe(PartialPeeksAtTwelve).items()}
    assert code_fold_induction._phase(PartialPeeksAtTwelve, source, phase, first_only, 30_000) is None
    assert code_fold_induction._phase(PartialPeeksAtTwelve, source, phase, probe(PartialPeeksAtTwelve), 30_000)


ListAsReversed = planted("ListAsReversed", "Its module's reversed is list: the tail is the head.", (),
                         {"reversed": list})
ChainAsReversed = planted("ChainAsReversed", "Its module's reversed is itertools.chain.", (),
                          {"reversed": itertools.chain})
RepeatAsIslice = planted("RepeatAsIslice", "Its module's islice is itertools.repeat.", (), {"islice": itertools.repeat})
IterAsReversed = planted("IterAsReversed", "Its module's iter is reversed: the head read is the newest.", (),
                         {"iter": reversed})
LocalReversed = planted("LocalReversed", "Binds reversed to list in schedule() itself.", (
    ("    left = self.config.token_budget\n", "    left = self.config.token_budget\n    reversed = list\n"),))


@pytest.mark.parametrize(("cls", "why"), [
    (ListAsReversed, "its module or body rebinds reversed"),
    (ChainAsReversed, "its module or body rebinds reversed"),
    (RepeatAsIslice, "is not itertools.islice"),
    (IterAsReversed, "its module or body rebinds iter"),
    (LocalReversed, "its module or body rebinds reversed"),
], ids=lambda x: getattr(x, "__name__", str(x)))
def test_a_builtin_the_frame_reads_by_name_rebound_is_refused(cls: type, why: str) -> None:
    """`reversed`, `islice`, `iter`, `len` and `list` are read by name in the phases' shapes: bound to
    another class (all builtin or itertools' classes, which a body may name), they are refused."""
    with pytest.raises(FrameError, match=why):
        read(cls)


def test_a_tail_walked_by_list_for_reversed_never_holds() -> None:
    """Before, every loop of ListAsReversed read a fold, only FOLD (code) at N=3 refuting schedule()."""
    out = prove(ListAsReversed)
    assert out.verdict is Verdict.BROKEN and "rebinds reversed" in out.detail and "at N=2 refuted" in out.detail


CrowdGate = planted("CrowdGate", "Admits nothing while four or more wait (a for over the line first).", (
    (WHILE, "    for seq in self._waiting.values():\n        pass\n    crowd = len(self._waiting)\n"
            "    while crowd < 4 and left and self._waiting"),))
CrowdMap = planted("CrowdMap", "Admits nothing while four or more wait (the line listed first).", (
    (WHILE, "    seen = list(self._waiting.values())\n    crowd = len(seen)\n"
            "    while crowd < 4 and left and self._waiting"),))


@pytest.mark.parametrize("cls", [CrowdGate, CrowdMap], ids=lambda c: c.__name__)
def test_a_container_walked_by_two_phases_is_refused(cls: type) -> None:
    """A phase may read the count of a container a phase before walks, as what that phase left: a second
    walk of it would make that count hold the requests the second walk visits after."""
    with pytest.raises(FrameError, match="which a phase before it walks"):
        read(cls)


def test_a_gate_on_the_count_of_a_line_walked_twice_never_holds() -> None:
    out = prove(CrowdGate)
    assert out.verdict is Verdict.BROKEN and "at N=4 refuted" in out.detail, out.detail


@pytest.mark.parametrize(("cls", "kind", "why"), [
    (Unbound, "while", "raises UnboundLocalError"),
    (RoundWithoutTaking, "while", "goes round without taking its request"),
    (ReadsTheWalkedCount, "for", "the container its loop walks"),
    (RidAsValue, "for", "uses its request's rid as a value"),
    (RidEquals, "for", "uses its request's rid as a value (__ne__)"),
    (ChangesItsSequence, "for", "changes its own request's sequence"),
    (HoldsOnAnEmptyLine, "while", "its test can hold, or move a carried value, with self._waiting empty"),
    (ReadsTheCalendar, "while", "reads self._finishing: a container of requests no phase before this one walks"),
], ids=lambda x: getattr(x, "__name__", str(x)))
def test_a_body_outside_its_frame_proves_nothing(cls: type, kind: str, why: str) -> None:
    found = _why(cls, kind)
    assert found is not None and why in found, found
    assert _why(cls, "map") is None  # the phases it keeps are still proved


def test_an_assert_outside_the_loops_is_a_guard() -> None:
    asserted = planted("Asserted", "Asserts a slot before admission.", (
        (WHILE, "    assert self.config.max_seqs > 0, 'no slot'\n" + WHILE),))
    assert prove(asserted).verdict is Verdict.HOLDS


def test_a_loop_rewritten_in_a_shape_the_frame_reads_is_still_proved() -> None:
    """The frame is about the loops, not the reference's spelling: decodes as a `for` hold too."""
    loop = planted("DecodesAsALoop", "Plans the decodes one by one.", (
        ("    entries = list(self._ready.values())\n    num_ready = len(entries)\n",
         "    entries = []\n    for decode in self._ready.values():\n        entries.append(decode)\n"
         "        left -= 1\n    num_ready = len(self._ready)\n"),
        ("    if num_ready > left:\n", "    if num_ready > self.config.token_budget:\n"),
        ("    left -= num_ready\n", ""),))
    out = prove(loop)
    assert out.verdict is Verdict.HOLDS, out.detail
    assert [label.split()[0] for label in out.phases] == ["for", "for", "while", "schedule()"], out.phases


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
    assert "tail's count, len(self._running) - num_ready, read, not proved" in row.detail  # what it rests on
    assert said and NAME in said[0]
    (broken,) = part(Options(factory=PartialReadsTheLine), said.append)
    assert broken.result is Verdict.BROKEN and "at N=2 refuted" in broken.detail


def test_prove_scheduler_exits_1_on_a_partial_loop_reading_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "stallfree.proofs.smt.code_fold_planted:PartialReadsTheLine"
    assert main(["prove", "--methods", "symbolic", "--code-requests", "1", "--scheduler", spec]) == 1
    out = capsys.readouterr().out
    row = [line for line in out.splitlines() if line.startswith(NAME)]
    assert row and "BROKEN" in row[0], out
    said = out[out.index(f"{NAME} ("):]  # the row's paragraph: the frame read the source, through the timer
    said = said[:said.index("\n\n")]
    assert "closure" not in said and "reads self._waiting: a container of requests" in said, said


# The review's planted non-folds (each read holds before the straight-line statements were held to a
# shape, the globals a body names to pure builtins and classes, and the row to FOLD (code) at N = 3).
DropFirstDecode = planted("DropFirstDecode", "Drops the first decode when a second is ready.", (
    ("    left -= num_ready\n", "    left -= num_ready\n    if len(entries) > 1:\n        entries.pop(0)\n"),))
LeakN = planted("LeakN", "Reads the last chunk a loop left, bound before the loops too.", (
    ("    left = self.config.token_budget\n", "    left = self.config.token_budget\n    n = 0\n"),
    (PLAN, "    if n == 1 and len(entries) > 1:\n        entries.pop(0)\n" + PLAN)))
LeftoverRead = planted("LeftoverRead", "Sets the step's budget left from the last chunk.", (
    ("    left = self.config.token_budget\n", "    left = self.config.token_budget\n    n = 0\n"),
    (PLAN, "    self._free_kv += n\n" + PLAN)))
DictReverse = planted("DictReverse", "Reverses the line through self.__dict__.", (
    (WHILE, "    [self.__dict__['_waiting'].move_to_end(rid, last=False) for rid in list(self.__dict__['_waiting'])]\n"
     + WHILE),))
GetattributeReverse = planted("GetattributeReverse", "Reverses the line through __getattribute__.", (
    (WHILE, "    [self.__getattribute__('_waiting').move_to_end(rid, last=False) for rid in list(self._waiting)]\n"
     + WHILE),))
DunderInABody = planted("DunderInABody", "Admission reads the line through self.__dict__.", (
    (HEAD, "        seq = next(reversed(self.__dict__['_waiting'].values()))\n"),))
_LINES: list[object] = []


def _add_aliasing(self: Scheduler, rid: int, prompt_len: int, max_new: int) -> None:
    Scheduler.add(self, rid, prompt_len, max_new)
    _LINES[:] = [self._waiting]


GlobalAliasLookAhead = planted("GlobalAliasLookAhead", "Looks behind the head through a module-level alias.", (
    (HEAD, HEAD + "        if len(_LINES[0]) > 1 and list(_LINES[0].values())[1].request.prompt_len < "
                  "seq.request.prompt_len:\n            break\n"),), {"_LINES": _LINES}, {"add": _add_aliasing})
ConfigShrink = planted("ConfigShrink", "One admission a step: the body shrinks the frozen config's slots.", (
    (WHILE, "    slots = self.config.max_seqs\n" + WHILE),
    (ADMIT, ADMIT + "        object.__setattr__(self.config, 'max_seqs', 0)\n"),
    (PLAN, "    object.__setattr__(self.config, 'max_seqs', slots)\n" + PLAN)))
SetattrConfig = planted("SetattrConfig", "The body sets the config through setattr.", (
    (ADMIT, ADMIT + "        setattr(self.config, 'max_seqs', 0)\n"),))
GuardOnCount = planted("GuardOnCount", "Refuses to plan once two wait.", (
    (WHILE, "    if len(self._waiting) > 1:\n        raise ValueError('two wait')\n" + WHILE),))


def _newest_init(self: Scheduler, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
    Scheduler.__init__(self, token_budget, max_seqs, kv_tokens)
    self._newest = None


NewestAttr = planted("NewestAttr", "Holds admission back while the newest in line has a short prompt.", (
    (WHILE, "    if self._newest is not None and self._newest.request.prompt_len < 2:\n        left = 0\n" + WHILE),),
    methods={"__init__": _newest_init})
NewestAttrAssigned = planted("NewestAttrAssigned", "Admits nothing once anyone waits (newest set).", (
    (WHILE, "    self._free_kv = self._free_kv if self._newest is None else 0\n" + WHILE),),
    methods={"__init__": _newest_init})
NewestAttrGuard = planted("NewestAttrGuard", "Refuses to plan while the newest in line has a short prompt.", (
    (WHILE, "    if self._newest is not None and self._newest.request.prompt_len < 2:\n        raise ValueError\n"
     + WHILE),), methods={"__init__": _newest_init})


@pytest.mark.parametrize(("cls", "why"), [
    (DropFirstDecode, "the statement `if len(entries) > 1:` outside the phase loops is no guard"),
    (LeakN, "the statement `if n == 1 and len(entries) > 1:` outside the phase loops is no guard"),
    (DictReverse, "the statement `[self.__dict__['_waiting'].move_to_end(rid, last=False) for rid in "
                  "list(self.__dict__['_waiting'])]` outside the phase loops is no guard"),
    (GetattributeReverse, "the statement `[self.__getattribute__('_waiting').move_to_end(rid, last=False) for rid "
                          "in list(self._waiting)]` outside the phase loops"),
], ids=lambda x: getattr(x, "__name__", "why"))
def test_a_straight_line_statement_touching_the_plan_or_the_line_is_refused_and_refuted(cls: type, why: str) -> None:
    out = prove(cls)
    assert out.verdict is Verdict.BROKEN, out.detail
    assert why in out.detail and "at N=2 refuted" in out.detail, out.detail


def _hidden_init(self: Scheduler, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
    Scheduler.__init__(self, token_budget, max_seqs, kv_tokens)
    self._hidden = 0  # an integer on a new scheduler, the line once a request is added


def _hidden_add(self: Scheduler, rid: int, prompt_len: int, max_new: int) -> None:
    Scheduler.add(self, rid, prompt_len, max_new)
    self._hidden = self._waiting


HiddenLine = planted("HiddenLine", "Admits nothing while the line (behind an integer attribute) is not empty.", (
    (WHILE, "    self._free_kv = 0 if self._hidden else self._free_kv\n" + WHILE),),
    methods={"__init__": _hidden_init, "add": _hidden_add})


class Peek:
    """A class of other code: its constructor could read anything; it is not read."""

    def __new__(cls) -> int:  # type: ignore[misc]
        return 0


ForeignClass = planted("ForeignClass", "Takes free KV from a class of other code.", (
    (WHILE, "    self._free_kv += Peek()\n" + WHILE),), {"Peek": Peek})
CountsAString = planted("CountsAString", "Counts the characters of the config's text.", (
    (WHILE, "    self._free_kv += len(str(self.config))\n" + WHILE),))
# The step record (`self._step`): its integer number and its plan's `is None` may be read outside the
# loops, its plan written; never its requests (the cancels, the ends) nor another of its fields.
RecordCancels = planted("RecordCancels", "Admits nothing while a cancel waits on the step record.", (
    (WHILE, "    self._free_kv = 0 if len(self._step.cancelled) else self._free_kv\n" + WHILE),))
RecordEnds = planted("RecordEnds", "Admits nothing while an ended request is on record.", (
    (WHILE, "    if self._step.ended:\n        raise ValueError('ended')\n" + WHILE),))
RecordEndsWritten = planted("RecordEndsWritten", "Clears the ended record from schedule().", (
    (WHILE, "    self._step.ended = {}\n" + WHILE),))
RecordPlanRead = planted("RecordPlanRead", "Reads the pending plan's entries, not only whether there is one.", (
    (WHILE, "    self._free_kv = self._free_kv if self._step.plan is None else self._step.plan.step\n" + WHILE),))


@pytest.mark.parametrize(("cls", "why"), [
    (LeftoverRead, "`self._free_kv += n` outside the phase loops reads n, bound by a loop before it"),
    (NewestAttr, "`if self._newest is not None and self._newest.request.prompt_len < 2:` outside the phase loops "
                 "is no guard"),
    (NewestAttrAssigned, "reads self._newest, neither a count nor the config"),
    (NewestAttrGuard, "reads self._newest.request.prompt_len, an attribute of no self"),
    (DunderInABody, "reads the dunder __dict__"),
    (SetattrConfig, "names setattr"),
    (ConfigShrink, "names object"),
    (GlobalAliasLookAhead, "names the global _LINES, a list (only pure builtins"),
    (HiddenLine, "reads self._hidden, neither a count nor the config"),
    (ForeignClass, "names the global Peek, a type"),
    (CountsAString, "counts str(self.config), no container of the scheduler"),
    (RecordCancels, "counts self._step.cancelled, no container of the scheduler"),
    (RecordEnds, "reads self._step.ended, a field of the record neither an integer nor asked `is None`"),
    (RecordEndsWritten, "writes self._step.ended, not a local or an attribute holding no requests"),
    (RecordPlanRead, "reads self._step.plan.step, an attribute of no self"),
], ids=lambda x: getattr(x, "__name__", "why"))
def test_what_reaches_past_the_frame_is_refused_when_read(cls: type, why: str) -> None:
    with pytest.raises(FrameError, match=None) as refused:
        read(cls)
    assert why in str(refused.value), refused.value


@pytest.mark.parametrize("cls", [GlobalAliasLookAhead, ConfigShrink], ids=lambda c: c.__name__)
def test_a_body_reaching_past_the_frame_never_holds(cls: type) -> None:
    """FOLD (code) refutes neither at N <= 4 (the alias is empty on a built state; one admission a step
    keeps each prefix's plan): the row reads unknown, naming the frame's refusal."""
    out = prove(cls)
    assert out.verdict is Verdict.UNKNOWN and "nothing proved" in out.detail, out.detail


def test_a_guard_on_a_count_is_not_proved_by_the_loops_alone() -> None:
    """Each loop is a fold and the guard may count a container, so only FOLD (code) at N = 3 sees it:
    schedule() raises there, FOLD (code) reads unknown naming it (no crash), and so does the row."""
    assert code_fold.prove(GuardOnCount, 2).verdict is Verdict.UNKNOWN
    assert "raises ValueError: two wait" in code_fold.prove(GuardOnCount, 2).detail
    out = prove(GuardOnCount)
    assert out.verdict is Verdict.UNKNOWN, out.detail
    assert "each loop is proved a fold, but FOLD (code) at N=3 reads unknown" in out.phases["schedule()"]


def test_the_timed_scheduler_of_prove_is_read_through_its_timer() -> None:
    """`stallfree prove --scheduler` times each call (a closure around the method): the row reads the
    method's own source through it."""
    out = prove(Watch(60.0).timed(Scheduler))
    assert out.verdict is Verdict.HOLDS, out.detail
    broken = prove(Watch(60.0).timed(PartialReadsTheLine))
    assert broken.verdict is Verdict.BROKEN and "closure" not in broken.detail, broken.detail
    assert "self._waiting: a container of requests" in broken.detail


def test_an_iteration_changing_a_class_list_in_place_or_the_config_is_seen() -> None:
    """The frame's check after each path: class attributes by value (a list filled in place counts),
    the config's fields by identity (a frozen config set through object.__setattr__ counts)."""
    from stallfree.proofs.smt.code_frame import _class_state
    from stallfree.spec.types import Config

    logged = type("Logged", (Scheduler,), {"log": []})
    config = Config(4, 2, 16)
    before = _class_state(logged, config)
    assert _class_state(logged, config) == before
    logged.log.append(1)
    assert _class_state(logged, config) != before
    logged.log.clear()
    assert _class_state(logged, config) == before
    object.__setattr__(config, "max_seqs", 0)
    assert _class_state(logged, config) != before


# A step record whose class runs code when schedule() reads or writes one of its fields (found by a
# review: each read holds before a record had to be a plain slots dataclass with no attribute hook).
def _shortest_first(line: Any) -> None:
    """A look-ahead: with 4 or more in line, the shortest prompt jumps to the head."""
    if len(line) >= 4:
        best = min(line.values(), key=lambda s: s.request.prompt_len)
        line.move_to_end(best.rid, last=False)


@dataclasses.dataclass
class DictStep:
    """A record with a `__dict__`: anything may be hung on it."""

    number: int
    plan: object = None
    cancelled: dict[int, object] = dataclasses.field(default_factory=dict)
    ended: dict[int, object] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(slots=True)
class HookStep(Step):
    """A slots record whose reads run code."""

    def __getattribute__(self, name: str) -> Any:
        if name == "plan":
            _shortest_first(_RECORD_LINES[0])
        return object.__getattribute__(self, name)


_RECORD_LINES: list[Any] = [OrderedDict()]


def _with_record(record: type) -> type:
    def __init__(self: Scheduler, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        Scheduler.__init__(self, token_budget, max_seqs, kv_tokens)
        self._step = record(0)
        _RECORD_LINES[0] = self._waiting

    return type(f"With{record.__name__}", (Scheduler,), {"__init__": __init__})


class PropertyStep(DictStep):
    """A record whose plan is a property."""

    @property  # type: ignore[override]
    def plan(self) -> object:
        _shortest_first(_RECORD_LINES[0])
        return self.__dict__.get("_plan")

    @plan.setter
    def plan(self, value: object) -> None:
        self.__dict__["_plan"] = value


@pytest.mark.parametrize("record", [DictStep, HookStep, PropertyStep], ids=lambda c: c.__name__)
def test_a_record_that_runs_code_on_a_field_is_no_record(record: type) -> None:
    cls = _with_record(record)
    assert attribute_kinds(cls)["_step"] == "other"
    with pytest.raises(FrameError) as refused:
        read(cls)
    assert "self._step" in str(refused.value), refused.value
    assert prove(cls).verdict is not Verdict.HOLDS
