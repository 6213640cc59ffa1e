"""Sweeps for the policy comparison: budgets x policies on a trace, and arrival-rate scales.

Each point is one full simulation; points run in `jobs` worker processes. Long: these are for
scripts and the CLI, not for CI.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import product

from stallfree.costs import Deployment, Roofline
from stallfree.spec import Config

from .policies import factory
from .simulator import simulate
from .summary import MS, Summary, summarise
from .trace import load

BUDGETS = (512, 1024, 2048, 4096, 8192, 16384)
RATE_SCALES = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True, slots=True)
class Point:
    trace: str
    policy: str
    budget: int
    rate_scale: float = 1.0
    limit: int | None = None
    max_new_cap: int | None = None  # None: max_new is each request's real length (the oracle)


@dataclass(frozen=True, slots=True)
class Setup:
    deployment: Deployment
    mode: str
    max_seqs: int
    kv_tokens: int | None = None  # None: what the deployment's memory holds


def run_point(setup: Setup, point: Point) -> Summary:
    trace = load(point.trace)
    if point.limit is not None:
        trace = trace.head(point.limit)
    trace = trace.scaled(point.rate_scale)
    kv = setup.kv_tokens if setup.kv_tokens is not None else setup.deployment.kv_tokens
    config = Config(point.budget, setup.max_seqs, kv)
    result = simulate(trace, factory(point.policy), config, Roofline(setup.deployment, setup.mode), point.policy,
                      max_new_cap=point.max_new_cap)
    return summarise(result)


def run_points(setup: Setup, points: Iterable[Point], jobs: int = 1) -> list[Summary]:
    """Every point, in the order given; progress (one line a point) to stderr."""
    points = list(points)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_point, setup, p) for p in points]
        summaries = []
        for i, (point, future) in enumerate(zip(points, futures, strict=True), 1):
            summary = future.result()
            cap = "" if point.max_new_cap is None else f" cap {point.max_new_cap}"
            print(f"[{i}/{len(points)}] {point.trace} x{point.rate_scale:g} {point.policy} budget {point.budget}{cap}: "
                  f"{summary.wall_seconds:.1f} s", file=sys.stderr, flush=True)
            summaries.append(summary)
    return summaries


def budget_points(traces: Iterable[str], policies: Iterable[str], budgets: Iterable[int],
                  limit: int | None = None) -> list[Point]:
    return [Point(t, p, b, 1.0, limit) for t, p, b in product(traces, policies, budgets)]


def rate_points(trace: str, policies: Iterable[str], budget: int, scales: Iterable[float],
                limit: int | None = None) -> list[Point]:
    return [Point(trace, p, budget, s, limit) for p, s in product(policies, scales)]


CAPS = (512, 1024, 2048, 3072, 4096, 6144, 8192)


def cap_points(traces: Iterable[str], caps: Iterable[int | None], budget: int, rate_scale: float,
               limit: int | None = None) -> list[Point]:
    """The reference on each trace with each max_new cap (None: the oracle)."""
    return [Point(t, "reference", budget, rate_scale, limit, cap) for t, cap in product(traces, caps)]


TABLE_HEADER = (f"{'trace':<12}{'policy':<15}{'budget':>7}{'rate':>6}{'TTFT p50':>10}{'TTFT p99':>10}"
                f"{'TPOT p50':>10}{'TPOT p99':>10}{'gap p99':>10}{'gap max':>10}{'queue p99':>11}"
                f"{'longest step':>13}{'step bound':>11}{'tok/s':>8}")


def table_row(s: Summary, rate_scale: float = 1.0) -> str:
    """One sweep point in milliseconds (TPOT: mean per request; gap: worst gap between tokens;
    step bound: the longest any step may take at the budget, costs.worst_step)."""
    lat = {k: v.scaled(MS) for k, v in s.latency.items() if v is not None}
    trace = s.trace.split(" x")[0]
    return (f"{trace:<12}{s.policy:<15}{s.token_budget:>7}{rate_scale:>5g}x{lat['ttft'].p50:>10.1f}"
            f"{lat['ttft'].p99:>10.1f}{lat['tpot'].p50:>10.1f}{lat['tpot'].p99:>10.1f}{lat['max_gap'].p99:>10.1f}"
            f"{lat['max_gap'].max:>10.1f}{lat['queueing'].p99:>11.1f}{s.longest_step * MS:>13.1f}"
            f"{s.step_bound * MS:>11.1f}{s.output_tokens_per_second:>8,.0f}")
