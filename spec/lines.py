"""A design's lines (waiting, running, prefilling, tracks by rid) and
what every shadow derives from them, whatever a request's track holds."""

from __future__ import annotations

from collections import deque
from typing import Any, Generic, Protocol, TypeVar


class Tracked(Protocol):
    @property
    def is_ready(self) -> bool: ...


T = TypeVar("T", bound=Tracked)


class Lines(Generic[T]):
    """What every design's shadow derives from its lines (`waiting`, `running`, `prefilling`, `tracks`
    by rid), whatever a request's track holds. The reservation design's `Shadow` writes these methods
    again instead of subclassing: mypyc cannot build a dataclass on a generic base."""

    __slots__ = ()
    waiting: deque[T]
    running: dict[int, T]
    prefilling: dict[int, T]
    tracks: dict[int, T]

    @property
    def is_idle(self) -> bool:
        return not self.waiting and not self.running

    def ready(self) -> list[T]:
        """Running requests with their prompt done, oldest admitted first."""
        return [t for t in self.running.values() if t.is_ready]

    def partial(self) -> list[T]:
        """Running requests still in prefill, oldest admitted first."""
        return list(self.prefilling.values())

    def is_taken(self, rid: int) -> bool:
        """True if a request that has not ended holds `rid`. The rid of an ended request may be
        reused; a scheduler may also refuse it (it need not remember ended requests)."""
        return rid in self.tracks


def start_running(lines: Any, track: Any, step: int) -> None:
    """Part of a step's action, the same in every design: admitted at `step`, `track` leaves the
    waiting line (from its head, unless a rule was broken) and runs, still in prefill."""
    if lines.waiting and lines.waiting[0] is track:
        lines.waiting.popleft()
    else:
        lines.waiting.remove(track)
    track.admitted_at = step
    lines.running[track.rid] = lines.prefilling[track.rid] = track
