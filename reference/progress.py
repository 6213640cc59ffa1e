"""A read-only snapshot of one request's progress, as the reference scheduler reports it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Phase(Enum):
    """Where a request is. Allowed moves: WAITING -> PARTIAL | READY | FINISHED (a prompt done in
    one chunk with max_new == 1 finishes on its admission step); PARTIAL -> READY | FINISHED;
    READY -> FINISHED. Never backwards: this version does not preempt."""

    WAITING = "waiting"
    PARTIAL = "partial"
    READY = "ready"
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class Progress:
    rid: int
    phase: Phase
    prompt_len: int
    max_new: int
    num_prefilled: int
    num_emitted: int
