"""Timing a scheduler's steps, shared by the step benchmarks (run as `python benchmarks/NAME.py`,
which puts this folder on the import path)."""

from __future__ import annotations

import time
from typing import Any


def time_steps(s: Any, steps: int) -> list[float]:
    """Microseconds of each of `steps` schedule() + complete() calls on `s`."""
    out = []
    clock = time.perf_counter_ns
    for _ in range(steps):
        t0 = clock()
        s.complete(s.schedule())
        out.append((clock() - t0) / 1000)
    return out
