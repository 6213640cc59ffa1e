"""A set of rids in memory that grows with the gaps between them, not with their number: what the trace
checkers keep of requests no longer live (`ended.EndedRids`, `refused.RefusedRids`).

Int rids are kept as disjoint runs [lo, hi): an engine numbers its requests as they arrive, so the rids a
checker must remember lie in long runs. Any other rid is kept one by one.
"""

from __future__ import annotations

from bisect import bisect_right


class RidRuns:
    __slots__ = ("_his", "_los", "_others")

    def __init__(self) -> None:
        self._los: list[int] = []  # the runs' starts, ascending
        self._his: list[int] = []  # their ends (exclusive)
        self._others: set[object] = set()  # rids that are not ints, one by one

    def __bool__(self) -> bool:
        return bool(self._los or self._others)

    def __contains__(self, rid: object) -> bool:
        if type(rid) is not int:
            return rid in self._others
        i = bisect_right(self._los, rid) - 1
        return i >= 0 and rid < self._his[i]

    def keep(self, rid: object) -> None:
        """`rid` is in the set from now on."""
        if type(rid) is not int:
            self._others.add(rid)
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

    def drop(self, rid: object) -> None:
        """`rid` is no longer in the set (a run is split around it)."""
        if type(rid) is not int:
            self._others.discard(rid)
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
        else:
            his[i] = rid
            los.insert(i + 1, rid + 1)
            his.insert(i + 1, hi)

    @property
    def runs(self) -> int:
        """How many runs and other rids are kept (what the memory grows with)."""
        return len(self._los) + len(self._others)
