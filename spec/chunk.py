"""A chunk of prefill: positions [start, start + n) of one track, in any design."""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar


class Prefilled(Protocol):
    @property
    def target(self) -> int: ...


T = TypeVar("T", bound=Prefilled)


class Chunk(Generic[T]):
    """Prefill positions [start, start + n) of `track`, run this step (for either design's track: its
    `target` is the prefill it owes, the prompt, plus the tokens it emitted after a preemption)."""

    __slots__ = ("n", "start", "track")

    def __init__(self, track: T, n: int, start: int) -> None:
        self.track = track
        self.n = n
        self.start = start

    @property
    def completes(self) -> bool:
        return self.start + self.n >= self.track.target
