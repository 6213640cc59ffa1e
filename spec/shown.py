"""What a scheduler shows of its state, where it shows it (free KV, queue
lengths, step count): read the same way by every design's invariants and monitor."""

from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Shown:
    """What a scheduler shows of its state, where it shows it (None where it does not)."""

    free_kv: int | None = None
    num_running: int | None = None
    num_waiting: int | None = None


def shown(scheduler: Any) -> Shown:
    """Read `free_kv`, `running` and `waiting` off `scheduler`, each only if it is there and well typed."""
    free_kv = getattr(scheduler, "free_kv", None)
    running = getattr(scheduler, "running", None)
    waiting = getattr(scheduler, "waiting", None)
    return Shown(
        free_kv if type(free_kv) is int else None,
        len(running) if isinstance(running, Sized) else None,
        len(waiting) if isinstance(waiting, Sized) else None,
    )


def visible(scheduler: Any) -> tuple[object, ...]:
    """What a scheduler shows of its state, where it shows it: free KV, step count, queue lengths.
    A refused call (add, cancel, a bad stop) must leave it as it was."""
    view = shown(scheduler)
    num_steps = getattr(scheduler, "num_steps", None)
    return view.free_kv, num_steps if type(num_steps) is int else None, view.num_waiting, view.num_running
