"""Timing a scheduler's steps, and the serving-scale state they are timed in, shared by the step
benchmarks (run as `python benchmarks/NAME.py`, which puts this folder on the import path)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

BUDGET = 8192
NUM_DECODES = 256
LONG = 10**12  # a prompt and max_new that outlast the benchmark


def loaded(factory: Callable[..., Any], num_waiting: int, priorities: bool = False) -> Any:
    """A scheduler from `factory` in the steady state: 256 ready requests, one long partial prompt,
    `num_waiting` more waiting on a slot (with priorities 0..3 in turn, where asked), budget 8,192."""
    s = factory(token_budget=BUDGET, max_seqs=NUM_DECODES + 1, kv_tokens=2**62)
    for rid in range(NUM_DECODES):
        s.add(rid, 1, LONG)
    s.complete(s.schedule())  # all 256 prompts in one step: now all ready
    s.add(NUM_DECODES, LONG, 1)  # the long prompt: partial from now on
    s.complete(s.schedule())
    for rid in range(num_waiting):
        if priorities:
            s.add(NUM_DECODES + 1 + rid, 100, 100, rid % 4)
        else:
            s.add(NUM_DECODES + 1 + rid, 100, 100)
    return s


def time_steps(s: Any, steps: int) -> list[float]:
    """Microseconds of each of `steps` schedule() + complete() calls on `s`."""
    out = []
    clock = time.perf_counter_ns
    for _ in range(steps):
        t0 = clock()
        s.complete(s.schedule())
        out.append((clock() - t0) / 1000)
    return out
