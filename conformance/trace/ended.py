"""The rids of ended requests, in memory bounded by what is live: the engine checker must know every rid
that ended (a rid added again is taken, rule NEVER-FIT; a request planned or emitting after its end
breaks TOKENS or CANCEL), but not keep a record per ended request.

The rids are kept as arithmetic progressions (`progressions.RidProgressions`): an engine numbers its
requests regularly (0, 1, 2, ..., every k-th, or "req-17" strings) and they end in about that order, so
the progressions number about the gaps left by requests still live (or refused: a refused rid must not
read as ended), not the requests ended. Rids that fit no progression (a uuid string, say) are kept one
by one. The step each ended at is kept for the last `RECENT` ended (for the messages); an older one's
step is no longer known, and a message says so.
"""

from __future__ import annotations

from .progressions import RidProgressions

RECENT = 256


class EndedRids(RidProgressions):
    __slots__ = ("_steps",)

    def __init__(self) -> None:
        super().__init__()
        self._steps: dict[object, int] = {}  # rid -> the step it ended at, for the last RECENT ended

    def add(self, rid: object, step: int) -> None:
        steps = self._steps
        steps[rid] = step
        if len(steps) > RECENT:
            del steps[next(iter(steps))]
        if type(rid) is int:
            self._ints.keep(rid)
        else:
            self.keep(rid)

    def discard(self, rid: object) -> None:
        """`rid` is live again (a v1 trace may accept an ended request's rid anew): no longer ended."""
        self._steps.pop(rid, None)
        self.drop(rid)

    def step_of(self, rid: object) -> int | None:
        """The step `rid` ended at, if it is among the last RECENT ended; else None."""
        return self._steps.get(rid)

    def when(self, rid: object) -> str:
        """'at step N' for a recent one, else that its step is no longer kept."""
        step = self._steps.get(rid)
        return f"at step {step}" if step is not None else f"(more than {RECENT} requests ago; its step is not kept)"
