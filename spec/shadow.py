"""The monitor's shadow state: what the contract says a scheduler's state must be, derived only from
what crosses the plain protocol (adds, plans, emitted rids). It never looks inside the scheduler.

This is the TLA+-style state of the spec: plain data, updated by one action (`apply`) per step.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .types import Config, Request


@dataclass(slots=True)
class Track:
    """The shadow of one accepted request."""

    request: Request
    num_prefilled: int = 0
    num_emitted: int = 0
    is_ready: bool = False  # prompt done (kept, not derived: the monitor reads it every step)
    admitted_at: int | None = None  # step of admission; None while waiting

    @property
    def rid(self) -> int:
        return self.request.rid

    @property
    def num_remaining_prompt(self) -> int:
        return self.request.prompt_len - self.num_prefilled


@dataclass(slots=True)
class Shadow:
    """Everything the rules need to judge the next step."""

    config: Config
    step: int = 0  # index of the next step
    waiting: deque[Track] = field(default_factory=deque)  # accepted, not admitted; arrival order
    running: dict[int, Track] = field(default_factory=dict)  # admitted, unfinished; admission order
    prefilling: dict[int, Track] = field(default_factory=dict)  # running with prompt not done; same order
    tracks: dict[int, Track] = field(default_factory=dict)  # accepted, unfinished requests, by rid
    finished: dict[int, int] = field(default_factory=dict)  # rid -> the step it finished (records dropped)
    rejected: set[int] = field(default_factory=set)  # rids whose add() was (rightly) refused
    free_kv: int = 0  # K minus the reservations of running requests
    num_ready: int = 0  # running requests whose prompt is done (kept so a step needs no scan)

    def __post_init__(self) -> None:
        self.free_kv = self.config.kv_tokens

    @property
    def is_idle(self) -> bool:
        return not self.waiting and not self.running

    def ready(self) -> list[Track]:
        """Running requests with their prompt done, oldest admitted first."""
        return [t for t in self.running.values() if t.is_ready]

    def partial(self) -> list[Track]:
        """Running requests still in prefill, oldest admitted first."""
        return list(self.prefilling.values())

    def is_taken(self, rid: int) -> bool:
        """True if an accepted request, finished or not, holds `rid`."""
        return rid in self.tracks or rid in self.finished

    def accept(self, request: Request) -> None:
        """Action: a request arrives and is queued."""
        track = Track(request)
        self.tracks[request.rid] = track
        self.waiting.append(track)
