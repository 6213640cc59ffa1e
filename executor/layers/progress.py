"""Progress stamps: how a hung rank is found by what it has done, not by whether it is alive.

Each rank stamps, in shared memory, the step it entered and when (its wall clock), and each
collective it enters (a count). A rank stuck inside a step (asleep, wedged, deadlocked before a
collective) stops stamping while its peers go on to the next collective and wait there for it, so
once no stamp has moved for `STALL_S` the rank that fell behind is the one that has entered fewer
collectives than every other rank; it is named, and no other. A heartbeat cannot tell these apart
(a rank blocked in a collective still beats, and so does a rank asleep in its step).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

STALL_S = 4.0  # no stamp moved this long: a stall (a step's collectives are milliseconds apart)
FIELDS = 3  # per rank: step, step-entry time, collectives entered


class Progress:
    """The stamps of every rank, in one shared array of doubles (`FIELDS` per rank)."""

    def __init__(self, stamps: Any) -> None:
        self.stamps = stamps

    @classmethod
    def shared(cls, ctx: Any, world_size: int) -> Progress:
        stamps = ctx.Array("d", FIELDS * world_size, lock=False)
        for rank in range(world_size):
            stamps[FIELDS * rank] = -1.0  # no step entered yet
        return cls(stamps)

    def enter_step(self, rank: int, step: int) -> None:
        self.stamps[FIELDS * rank] = float(step)
        self.stamps[FIELDS * rank + 1] = time.time()

    def enter_collective(self, rank: int) -> None:
        self.stamps[FIELDS * rank + 2] += 1.0

    def step(self, rank: int) -> int:
        return int(self.stamps[FIELDS * rank])

    def step_entered_at(self, rank: int) -> float:
        return float(self.stamps[FIELDS * rank + 1])

    def collectives(self, rank: int) -> int:
        return int(self.stamps[FIELDS * rank + 2])

    def snapshot(self, world_size: int) -> tuple[int, ...]:
        return tuple(self.collectives(rank) for rank in range(world_size))


@dataclass(slots=True)
class StallWatch:
    """The launcher's side: when the stamps last moved, and who is behind once they stop."""

    progress: Progress
    world_size: int
    last: tuple[int, ...] = ()
    moved_at: float = field(default_factory=time.monotonic)

    def behind(self, now: float | None = None) -> tuple[int, str] | None:
        """(rank, why) for the one rank that fell behind, once no stamp has moved for STALL_S and every
        rank has entered a collective; None while the ranks progress, or when no single rank is behind."""
        now = time.monotonic() if now is None else now
        snap = self.progress.snapshot(self.world_size)
        if snap != self.last:
            self.last, self.moved_at = snap, now
            return None
        if min(snap) == 0 or now - self.moved_at < STALL_S:
            return None
        low = min(snap)
        laggards = [rank for rank, n in enumerate(snap) if n == low]
        if len(laggards) != 1:
            return None
        rank = laggards[0]
        return rank, self.why(rank, snap, now - self.moved_at)

    def why(self, rank: int, snap: tuple[int, ...], stalled_s: float) -> str:
        p = self.progress
        since = time.time() - p.step_entered_at(rank)
        peers = ", ".join(f"rank {r} at step {p.step(r)} ({n})" for r, n in enumerate(snap) if r != rank)
        return (f"fell behind: stuck in step {p.step(rank)}, entered {since:.1f} s ago, after {snap[rank]} "
                f"collectives, while its peers wait in their next collective ({peers}); no stamp moved "
                f"for {stalled_s:.1f} s")
