"""Planted copies of the reference that tell the frame from a real run, or change what it reads beside
the loop bodies: each right on every state of three requests (FOLD (code) at N = 3 holds), each no fold
past it, and each read "holds" by FOLD (code, induction, any N) until the frame refused what it uses
(a review of the frame: the plan list rebound in a loop body; `self` or a value's type inspected, by
`isinstance` or a `match` class pattern; a container of a subclass, its own `values()` or `__len__`).
"""

from __future__ import annotations

from stallfree.reference import Scheduler

from .code_fold_planted import CHUNK, planted

ADMIT = "        n = min(seq.request.prompt_len, left)\n"  # the admission's chunk


def _chunk_cut(name: str, doc: str, test: str) -> type[Scheduler]:
    """A partial's chunk cut to one token where `test` holds: a branch the frame's values never take."""
    return planted(name, doc, ((CHUNK, CHUNK + f"            if {test}:\n                n = 1\n"),))


TailDropsDecodes = planted("TailDropsDecodes", "Three ready: the partial loop drops the plan (DECODE-FIRST).", (
    (CHUNK, CHUNK + "            if num_ready >= 3:\n                entries = []\n"),))
AdmitDropsPlan = planted("AdmitDropsPlan", "With four running, admission drops the plan list (FCFS).", (
    (ADMIT, ADMIT + "        if len(self._running) >= 4:\n            entries = []\n"),))
SelfIsScheduler = _chunk_cut("SelfIsScheduler", "A partial's chunk is one token while four wait, "
                             "past isinstance(self) (PARTIAL-NEXT).",
                             "isinstance(self, Scheduler) and len(self._waiting) >= 4")
ConcreteOnly = _chunk_cut("ConcreteOnly", "A partial's chunk is one token on ints alone (PARTIAL-NEXT).",
                          "isinstance(left, int) and len(self._waiting) >= 1")
MatchInt = planted("MatchInt", "A partial's chunk is one token where left matches int() (PARTIAL-NEXT).", (
    (CHUNK, CHUNK + "            match left:\n                case int() if len(self._waiting) >= 1:\n"
                    "                    n = 1\n"),))


class NewestFirstFromFour(dict):  # type: ignore[type-arg]
    """A dict whose values come newest first once it holds four."""

    def values(self):  # type: ignore[no-untyped-def]
        held = list(super().values())
        return held[::-1] if len(held) >= 4 else held


class OneMoreFromFour(dict):  # type: ignore[type-arg]
    """A dict whose len is one more than it holds once it holds four."""

    def __len__(self) -> int:
        held = super().__len__()
        return held + 1 if held >= 4 else held


def _running_as(kind: type) -> object:
    def __init__(self: Scheduler, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        Scheduler.__init__(self, token_budget, max_seqs, kv_tokens)
        self._running = kind()  # type: ignore[assignment]
    return __init__


RunningSubclass = planted("RunningSubclass", "_running's values() newest first from four (ONE-ENTRY).", (),
                          methods={"__init__": _running_as(NewestFirstFromFour)})
RunningLenLies = planted("RunningLenLies", "_running's len one too many from four (ONE-ENTRY).", (),
                         methods={"__init__": _running_as(OneMoreFromFour)})

FRAME_CONTROLS = (TailDropsDecodes, AdmitDropsPlan, SelfIsScheduler, ConcreteOnly, MatchInt, RunningSubclass,
                  RunningLenLies)
"""Refused by the frame, so never holds: BROKEN where FOLD (code) at N <= 4 refutes it, unknown otherwise."""
