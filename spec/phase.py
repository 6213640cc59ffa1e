"""Where a request is, as a scheduler reports it (`progress(rid)`): one lifecycle for both designs."""

from __future__ import annotations

from enum import Enum


class Phase(Enum):
    """Where a request is. Allowed moves: WAITING -> PARTIAL | READY | FINISHED | STOPPED (a prompt
    done in one chunk may end on its admission step); PARTIAL -> READY | FINISHED | STOPPED;
    READY -> FINISHED | STOPPED; any of WAITING, PARTIAL, READY -> CANCELLED. FINISHED, STOPPED and
    CANCELLED are ends (the finish reasons length, stop, cancel). The reservation design never moves
    backwards; the paged design also moves PARTIAL | READY -> WAITING when it preempts a request (its
    KV forgotten, its emitted tokens kept), and its PARTIAL then prefills the prompt plus those tokens."""

    WAITING = "waiting"
    PARTIAL = "partial"
    READY = "ready"
    FINISHED = "finished"  # emitted its max_new tokens
    STOPPED = "stopped"  # its token ended it (complete()'s `stopped`)
    CANCELLED = "cancelled"
