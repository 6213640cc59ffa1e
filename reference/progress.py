"""A read-only snapshot of one request's progress, as the reference scheduler reports it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Phase(Enum):
    """Where a request is. Allowed moves: WAITING -> PARTIAL | READY | FINISHED | STOPPED (a prompt
    done in one chunk may end on its admission step); PARTIAL -> READY | FINISHED | STOPPED;
    READY -> FINISHED | STOPPED; any of WAITING, PARTIAL, READY -> CANCELLED. FINISHED, STOPPED and
    CANCELLED are ends (the finish reasons length, stop, cancel). Never backwards: this version does
    not preempt."""

    WAITING = "waiting"
    PARTIAL = "partial"
    READY = "ready"
    FINISHED = "finished"  # emitted its max_new tokens
    STOPPED = "stopped"  # its token ended it (complete()'s `stopped`)
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Progress:
    rid: int
    phase: Phase
    prompt_len: int
    max_new: int
    num_prefilled: int
    num_emitted: int
