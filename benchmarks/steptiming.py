"""The steady state at serving scale and the timing of a scheduler's steps, shared by the step
benchmarks (run as `python benchmarks/NAME.py`, which puts this folder on the import path)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

BUDGET = 8192
NUM_DECODES = 256
LONG = 10**12  # a prompt and max_new that outlast the benchmark


def loaded(factory: Callable[..., Any], num_waiting: int, add: Callable[[Any, int], None] | None = None) -> Any:
    """A scheduler in the steady state: NUM_DECODES ready requests that never finish, one long partial
    prompt, and `num_waiting` requests (100 + 100 tokens) blocked behind them on a slot. `add(s, rid)`
    adds a waiting request where the default call does not fit `factory`."""
    s = factory(token_budget=BUDGET, max_seqs=NUM_DECODES + 1, kv_tokens=2**62)
    for rid in range(NUM_DECODES):
        s.add(rid, 1, LONG)
    s.complete(s.schedule())  # all 256 prompts in one step: now all ready
    s.add(NUM_DECODES, LONG, 1)  # the long prompt: partial from now on
    s.complete(s.schedule())
    for rid in range(NUM_DECODES + 1, NUM_DECODES + 1 + num_waiting):
        if add is None:
            s.add(rid, 100, 100)
        else:
            add(s, rid)
    return s


def time_steps(s: Any, steps: int, between: Callable[[], None] | None = None) -> list[float]:
    """Microseconds of each of `steps` schedule() + complete() calls on `s`; `between()`, if given,
    runs after each, untimed."""
    out = []
    clock = time.perf_counter_ns
    for _ in range(steps):
        t0 = clock()
        s.complete(s.schedule())
        out.append((clock() - t0) / 1000)
        if between is not None:
            between()
    return out


def interleaved(schedulers: dict[Any, Any], steps: int, rounds: int) -> dict[Any, list[float]]:
    """The step times of each scheduler, `steps` in all, taken in `rounds` rounds that visit every
    scheduler in turn, so that machine noise hits them alike."""
    samples: dict[Any, list[float]] = {key: [] for key in schedulers}
    for _ in range(rounds):
        for key, s in schedulers.items():
            samples[key] += time_steps(s, steps // rounds)
    return samples


def print_medians(samples: dict[Any, list[float]], label: str, width: int = 10) -> None:
    """Median and quartiles of each sample, and its median's ratio to the first's."""
    base = statistics.median(next(iter(samples.values())))
    first = next(iter(samples))
    print(f"{label:<{width}} {'median us':>10} {'p25':>8} {'p75':>8}  vs {first}")
    for key, values in samples.items():
        q = statistics.quantiles(values, n=4)
        med = statistics.median(values)
        print(f"{key!s:<{width}} {med:>10.1f} {q[0]:>8.1f} {q[2]:>8.1f}  {med / base:.2f}x")
