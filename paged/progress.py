"""A read-only snapshot of one request's progress in the paged scheduler."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Phase(Enum):
    """Where a request is. Unlike the reference's phases these may go back: a preempted request is
    WAITING again, with its emitted tokens kept and its KV forgotten."""

    WAITING = "waiting"
    PARTIAL = "partial"  # prefilling its prompt (plus, after a preemption, the tokens it emitted)
    READY = "ready"
    FINISHED = "finished"  # emitted max_new tokens
    STOPPED = "stopped"  # its token ended it early (complete(plan, stopped=...))
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class PagedProgress:
    rid: int
    phase: Phase
    prompt_len: int
    max_new: int
    num_computed: int  # tokens in KV: prompt positions and decoded tokens run in this residency
    num_emitted: int
    num_blocks: int  # blocks held now
    num_preemptions: int
