"""The record of ended rids as it was before, kept as the oracle and the baseline for
`conformance/trace/progressions.py` (issue 31, item 7): `PlainEndedRids`, a set of every ended rid (what
the checkers kept first, the oracle of `tests/test_ended_progressions.py`), and `RunEndedRids`, runs of
consecutive ints with every other rid one by one (the record before progressions, the baseline of
`benchmarks/ended_memory.py`). Both answer as `ended.EndedRids` does: add, discard, in, step_of, when."""

from __future__ import annotations

from stallfree.conformance.trace.ended import RECENT
from stallfree.conformance.trace.runs import RidRuns


class PlainEndedRids:
    """Every ended rid in a set, and the step of the last RECENT ended."""

    __slots__ = ("_rids", "_steps")

    def __init__(self) -> None:
        self._rids: set[object] = set()
        self._steps: dict[object, int] = {}

    def __bool__(self) -> bool:
        return bool(self._rids)

    def __contains__(self, rid: object) -> bool:
        return rid in self._rids

    def add(self, rid: object, step: int) -> None:
        steps = self._steps
        steps[rid] = step
        if len(steps) > RECENT:
            del steps[next(iter(steps))]
        self._rids.add(rid)

    def discard(self, rid: object) -> None:
        self._steps.pop(rid, None)
        self._rids.discard(rid)

    def step_of(self, rid: object) -> int | None:
        return self._steps.get(rid)

    def when(self, rid: object) -> str:
        step = self._steps.get(rid)
        return f"at step {step}" if step is not None else f"(more than {RECENT} requests ago; its step is not kept)"

    @property
    def runs(self) -> int:
        return len(self._rids)


class RunEndedRids(RidRuns):
    """Int rids as runs [lo, hi) of consecutive ints, any other rid one by one (the class before
    progressions, as it was)."""

    __slots__ = ("_steps",)

    def __init__(self) -> None:
        super().__init__()
        self._steps: dict[object, int] = {}

    def add(self, rid: object, step: int) -> None:
        steps = self._steps
        steps[rid] = step
        if len(steps) > RECENT:
            del steps[next(iter(steps))]
        his = self._his
        if his and his[-1] == rid and type(rid) is int:
            his[-1] = rid + 1
            return
        self.keep(rid)

    def discard(self, rid: object) -> None:
        self._steps.pop(rid, None)
        self.drop(rid)

    def step_of(self, rid: object) -> int | None:
        return self._steps.get(rid)

    def when(self, rid: object) -> str:
        step = self._steps.get(rid)
        return f"at step {step}" if step is not None else f"(more than {RECENT} requests ago; its step is not kept)"
