"""Random workloads for campaigns and tests, from a seed (standard library `random`).

The ranges follow the contract's test campaign: budgets 1..256, slots 1..11, prompts 1..299,
max_new 1..30, staggered arrivals, KV from barely enough for the largest request to generous, and
a few never-fit requests that add() must refuse. `LIFECYCLE` adds stops (a request's real output
length, drawn below max_new) and cancels (of waiting, running and ended requests, between steps and
while a plan is pending, and of rids never added); with the default ranges no draw is spent on them,
so the plain workloads of a seed stay what they were.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from stallfree.spec.types import Config
from stallfree.spec.workload import Arrival, Cancel, Workload


@dataclass(frozen=True, slots=True)
class Ranges:
    max_budget: int = 256
    max_seqs: int = 11
    max_prompt: int = 299
    max_new: int = 30
    max_requests: int = 24
    max_gap: int = 6  # steps between consecutive arrivals
    never_fit_share: float = 0.05
    stop_share: float = 0.0  # requests that stop before max_new
    cancel_share: float = 0.0  # requests offered a cancel (some of them after they ended)


LIFECYCLE = Ranges(stop_share=0.5, cancel_share=0.3)
NEVER_ADDED = 10**6  # cancels of rids from here on name no request


def random_workload(rng: random.Random, ranges: Ranges = Ranges()) -> Workload:
    """One workload: a config, then requests that fit it, interleaved with a few that never fit."""
    budget = rng.choice((1, 2, rng.randint(1, ranges.max_budget), rng.randint(1, ranges.max_budget)))
    max_seqs = rng.choice((1, rng.randint(1, ranges.max_seqs)))
    num = rng.randint(1, ranges.max_requests)
    sizes = [(rng.randint(1, ranges.max_prompt), rng.randint(1, ranges.max_new)) for _ in range(num)]
    largest = max(p + m for p, m in sizes)
    # KV from exactly the largest request (one at a time) to room for all of them.
    kv = rng.choice((largest, largest + rng.randint(0, largest), sum(p + m for p, m in sizes)))
    arrivals = []
    step = 0
    for rid, (prompt_len, max_new) in enumerate(sizes):
        step += rng.choice((0, 0, rng.randint(0, ranges.max_gap)))
        if rng.random() < ranges.never_fit_share:  # a request that exceeds K: add() must refuse it
            arrivals.append(Arrival(rid + num, kv + 1 - max_new, max_new, step))
        stop_after = rng.randint(1, max_new) if ranges.stop_share and rng.random() < ranges.stop_share else None
        arrivals.append(Arrival(rid, prompt_len, max_new, step, stop_after=stop_after))
    cancels = []
    if ranges.cancel_share:
        for a in arrivals:
            if rng.random() < ranges.cancel_share:
                later = rng.randint(0, ranges.max_gap * 2 + a.max_new)
                cancels.append(Cancel(a.rid, a.arrival_step + later, rng.random() < 0.5))
        if rng.random() < ranges.cancel_share:
            cancels.append(Cancel(NEVER_ADDED + rng.randint(0, 9), rng.randint(0, step + 1)))
    return Workload(Config(budget, max_seqs, kv), tuple(arrivals), cancels=tuple(cancels))
