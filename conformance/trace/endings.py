"""How the requests of a v1 trace ended, in memory bounded by what is live: the v1 checker's `Shadow.ended`.

The monitor keeps a record per ended request (rid -> `Ending`): a rid planned or emitting after its end
breaks TOKENS, or CANCEL if it was cancelled, and add() of it may be accepted or refused (NEVER-FIT). A
live monitor's run is short; a trace may hold millions of requests. So the trace checker gives its
monitor this map instead: the rids of each reason (length, stop, cancel) kept as arithmetic
progressions (`ended.EndedRids`), with the step of the last `ended.RECENT` of each reason. An older one's `Ending`
has step None, and a message says its step is no longer kept; the rule it breaks is the same.
"""

from __future__ import annotations

from stallfree.spec.ending import Ending, Reason

from .ended import EndedRids


class Endings:
    """rid -> Ending, as `Shadow.ended` is read and written: get, in, pop, and [rid] = ending."""

    __slots__ = ("_by_reason", "_top")

    def __init__(self) -> None:
        self._by_reason: dict[Reason, EndedRids] = {reason: EndedRids() for reason in Reason}
        self._top = 0  # above every int rid ever ended: a new request's rid is answered at once

    def __contains__(self, rid: object) -> bool:
        if type(rid) is int and rid >= self._top:
            return False
        for rids in self._by_reason.values():  # noqa: SIM110 (a plain loop: faster than any() over a generator)
            if rid in rids:
                return True
        return False

    def get(self, rid: object, default: Ending | None = None) -> Ending | None:
        if type(rid) is int and rid >= self._top:
            return default
        for reason, rids in self._by_reason.items():
            if rid in rids:
                return Ending(rids.step_of(rid), reason)
        return default

    def __setitem__(self, rid: object, ending: Ending) -> None:
        if (type(rid) is not int or rid < self._top) and rid in self:  # an int rid above every one ended: not in
            self.pop(rid)
        assert ending.step is not None  # the shadow ends a request at its current step
        self._by_reason[ending.reason].add(rid, ending.step)
        if type(rid) is int and rid >= self._top:
            self._top = rid + 1

    def pop(self, rid: object, default: Ending | None = None) -> Ending | None:
        if type(rid) is int and rid >= self._top:  # a new request's rid (`Shadow.accept`): not ended
            return default
        found = self.get(rid)
        if found is None:
            return default
        self._by_reason[found.reason].discard(rid)
        return found

    @property
    def runs(self) -> int:
        """Runs and string rids kept, over every reason: what the memory grows with."""
        return sum(rids.runs for rids in self._by_reason.values())
