"""The rids of refused requests, in memory that does not grow with the refusals: a checker must know
every rid whose add() was refused (planned, it breaks NEVER-FIT: "was refused by add() yet is planned",
not PROTOCOL's "never added"), but not keep a record per refusal.

Both checkers ask it only of a rid that is neither live nor ended, and an accepted rid stays one of the
two (live, then ended, then live again if accepted anew). So the set kept may hold accepted int rids
too: their answer is never read. Int rids are kept as runs (`runs.RidRuns`) that reach over the accepted
rids beside them, so that refusals scattered among accepted requests, in rid order, make one run. Any
other rid (a string, or a refused 3.0 or True) is kept one by one; an int asked is also looked up among
those, as a set of the refused rids would answer (3.0 == 3).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable

from .runs import RidRuns


class RefusedRids(RidRuns):
    """The refused rids, read and written as the set it replaces: `rid in` and `add(rid)`."""

    __slots__ = ("_known",)

    def __init__(self, known: Callable[[int], bool]) -> None:
        super().__init__()
        self._known = known  # whether an int rid is live or ended now: accepted, so its answer is never read

    def __contains__(self, rid: object) -> bool:
        if type(rid) is int:
            return RidRuns.__contains__(self, rid) or (bool(self._others) and rid in self._others)
        return rid in self._others

    def add(self, rid: object) -> None:
        if type(rid) is not int:
            self._others.add(rid)
            return
        self._reach_left(rid)
        self.keep(rid)
        self._reach_right(rid)

    def _reach_left(self, rid: int) -> None:
        """The run left of `rid` grows over the accepted rids after it (each looked at once: it stays in)."""
        los, his, known = self._los, self._his, self._known
        i = bisect_right(los, rid) - 1
        if i < 0 or rid < his[i]:
            return
        hi = his[i]
        while hi < rid and known(hi):
            hi += 1
        his[i] = hi

    def _reach_right(self, rid: int) -> None:
        """`rid`'s run grows over the accepted rids after it, up to the next run (joined when reached)."""
        los, his, known = self._los, self._his, self._known
        i = bisect_right(los, rid) - 1
        hi = his[i]
        nxt = los[i + 1] if i + 1 < len(los) else None
        while (nxt is None or hi < nxt) and known(hi):
            hi += 1
        if nxt is not None and hi == nxt:
            his[i] = his[i + 1]
            del los[i + 1], his[i + 1]
        else:
            his[i] = hi
