"""The monitor's shadow state: what the contract says a scheduler's state must be, derived only from
what crosses the plain protocol (adds, plans, emitted rids). It never looks inside the scheduler.

This is the TLA+-style state of the spec: plain data, updated by one action (`apply`) per step.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..ending import Ending, Reason
from ..errors import InvalidField
from ..types import Config, Request
from ..utils import copies


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

    @property
    def target(self) -> int:
        """The prefill it owes: its prompt (this design never preempts)."""
        return self.request.prompt_len

    def copy(self) -> Track:
        """An independent copy (`Shadow.__deepcopy__`)."""
        return Track(self.request, self.num_prefilled, self.num_emitted, self.is_ready, self.admitted_at)


@dataclass(slots=True)
class Shadow:
    """Everything the rules need to judge the next step. It has the methods of `Lines` without
    subclassing it: mypyc, which compiles this module for long campaigns (scripts/compiled.sh),
    cannot build a dataclass on a generic base."""

    config: Config
    step: int = 0  # index of the next step
    waiting: deque[Track] = field(default_factory=deque)  # accepted, not admitted; arrival order
    running: dict[int, Track] = field(default_factory=dict)  # admitted, unfinished; admission order
    prefilling: dict[int, Track] = field(default_factory=dict)  # running with prompt not done; same order
    tracks: dict[int, Track] = field(default_factory=dict)  # accepted requests not yet ended, by rid
    ended: dict[int, Ending] = field(default_factory=dict)  # rid -> how it ended (records dropped)
    rejected: set[int] = field(default_factory=set)  # rids whose add() was (rightly) refused
    free_kv: int = 0  # K minus the reservations of running requests
    num_ready: int = 0  # running requests whose prompt is done (kept so a step needs no scan)
    # The reservations of running requests cancelled since the last schedule(): the contract wants
    # them back *by the next schedule()*, so until then a scheduler may still show them taken.
    kv_owed: int = 0

    def __post_init__(self) -> None:
        self.free_kv = self.config.kv_tokens

    def __deepcopy__(self, memo: dict[int, Any]) -> Shadow:
        """What `copy.deepcopy` makes, in a fraction of its time, for a search that branches from one
        state (the model checker): each track copied once, every line pointing at its copy."""
        if type(self) is not Shadow:  # a subclass's fields of its own are not known here
            return copies.fields(self, memo)  # type: ignore[no-any-return]
        for t in self.tracks.values():  # every request not ended: those the lines below point at
            if id(t) not in memo:
                memo[id(t)] = t.copy()
        twin = memo.get  # a track no longer in `tracks` (a broken shadow's) is copied by `_twin`
        new = Shadow(self.config, self.step, deque([twin(id(t)) or _twin(t, memo) for t in self.waiting]),
                     {rid: twin(id(t)) or _twin(t, memo) for rid, t in self.running.items()},
                     {rid: twin(id(t)) or _twin(t, memo) for rid, t in self.prefilling.items()},
                     {rid: memo[id(t)] for rid, t in self.tracks.items()}, dict(self.ended), set(self.rejected))
        new.free_kv = self.free_kv
        new.num_ready = self.num_ready
        new.kv_owed = self.kv_owed
        memo[id(self)] = new
        return new

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
        """True if a request that has not ended holds `rid` (the rid of an ended one may be reused)."""
        return rid in self.tracks

    def accept(self, request: Request) -> None:
        """Action: a request arrives and is queued. Raises InvalidField, changing nothing, for a rid a
        request that has not ended holds (a scheduler that accepts it cannot be followed: PROTOCOL where
        NEVER-FIT, which refuses it first, is not checked)."""
        if request.rid in self.tracks:
            raise InvalidField(f"rid {request.rid} is already taken by a request that has not ended")
        track = Track(request)
        self.tracks[request.rid] = track
        self.ended.pop(request.rid, None)
        self.waiting.append(track)

    def end(self, track: Track, reason: Reason) -> None:
        """Action: `track` ends now (finished, stopped or cancelled); a running one returns its
        reservation. The step is the shadow's current one: call before it advances."""
        rid = track.rid
        del self.tracks[rid]
        self.ended[rid] = Ending(self.step, reason)
        if track.admitted_at is None:
            self.waiting.remove(track)
            return
        del self.running[rid]
        self.free_kv += track.request.reservation
        if track.is_ready:
            self.num_ready -= 1
        else:
            del self.prefilling[rid]


def _twin(track: Track, memo: dict[int, Any]) -> Track:
    """`track`'s copy in one deep copy (`memo`, `copy.deepcopy`'s): made on first sight, then the same one.
    The reference's scheduler writes the same for its sequences: each compiled module (mypyc) keeps
    its own, typed for its own class."""
    twin: Track | None = memo.get(id(track))
    if twin is None:
        twin = memo[id(track)] = track.copy()
    return twin
