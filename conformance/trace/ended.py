"""The rids of ended requests, in memory bounded by what is live: the engine checker must know every rid
that ended (a rid added again is taken, rule NEVER-FIT; a request planned or emitting after its end
breaks TOKENS or CANCEL), but not keep a record per ended request.

Int rids are kept as disjoint runs [lo, hi): an engine numbers its requests as they arrive and they end
in about that order, so the runs number about the gaps left by requests still live (or refused), not
the requests ended. String rids are kept one by one. The step each ended at is kept for the last
`RECENT` ended (for the messages); an older one's step is no longer known, and a message says so.
"""

from __future__ import annotations

from bisect import bisect_right

RECENT = 256


class EndedRids:
    __slots__ = ("_his", "_los", "_steps", "_strs")

    def __init__(self) -> None:
        self._los: list[int] = []  # the runs' starts, ascending
        self._his: list[int] = []  # their ends (exclusive)
        self._strs: set[object] = set()
        self._steps: dict[object, int] = {}  # rid -> the step it ended at, for the last RECENT ended

    def __bool__(self) -> bool:
        return bool(self._los or self._strs)

    def __contains__(self, rid: object) -> bool:
        if type(rid) is not int:
            return rid in self._strs
        i = bisect_right(self._los, rid) - 1
        return i >= 0 and rid < self._his[i]

    def add(self, rid: object, step: int) -> None:
        steps = self._steps
        steps[rid] = step
        if len(steps) > RECENT:
            del steps[next(iter(steps))]
        if type(rid) is not int:
            self._strs.add(rid)
            return
        los, his = self._los, self._his
        i = bisect_right(los, rid) - 1
        if i >= 0 and rid < his[i]:
            return
        joins_left = i >= 0 and his[i] == rid
        joins_right = i + 1 < len(los) and los[i + 1] == rid + 1
        if joins_left and joins_right:
            his[i] = his[i + 1]
            del los[i + 1], his[i + 1]
        elif joins_left:
            his[i] = rid + 1
        elif joins_right:
            los[i + 1] = rid
        else:
            los.insert(i + 1, rid)
            his.insert(i + 1, rid + 1)

    def discard(self, rid: object) -> None:
        """`rid` is live again (a v1 trace may accept an ended request's rid anew): no longer ended."""
        self._steps.pop(rid, None)
        if type(rid) is not int:
            self._strs.discard(rid)
            return
        los, his = self._los, self._his
        i = bisect_right(los, rid) - 1
        if i < 0 or rid >= his[i]:
            return
        lo, hi = los[i], his[i]
        if lo == rid and hi == rid + 1:
            del los[i], his[i]
        elif lo == rid:
            los[i] = rid + 1
        elif hi == rid + 1:
            his[i] = rid
        else:  # split the run around it
            his[i] = rid
            los.insert(i + 1, rid + 1)
            his.insert(i + 1, hi)

    def step_of(self, rid: object) -> int | None:
        """The step `rid` ended at, if it is among the last RECENT ended; else None."""
        return self._steps.get(rid)

    def when(self, rid: object) -> str:
        """'at step N' for a recent one, else that its step is no longer kept."""
        step = self._steps.get(rid)
        return f"at step {step}" if step is not None else f"(more than {RECENT} requests ago; its step is not kept)"

    @property
    def runs(self) -> int:
        """How many runs and string rids are kept (what the memory grows with)."""
        return len(self._los) + len(self._strs)
