"""The campaign on the local pool and on Ray, side by side, and what 1000x the seed's campaign would take.

    python benchmarks/campaign_ray.py                 # base scale (500 simulations), 3 rounds
    python benchmarks/campaign_ray.py --rounds 1 --sims 200

Each round runs the same campaign (the reference, seed 0) four ways, in turn: the local pool on 1 job
and on 2, Ray on a local instance of 1 worker CPU and of 2. Prints, per way, the median wall seconds of
the campaign (Ray's start-up, timed apart, not in it), steps per second in all, steps per CPU-second of
a worker, and the ratio to the local pool on 1 job. All four must count the same simulations, steps,
tokens and checks, or it stops. Then the extrapolation to 1000x the seed's campaign (366,724,000
steps): at the wall rates measured on this machine's cores, and beyond them one core's rate (steps
per CPU-second of a Ray worker) times the workers (an extrapolation, labelled so).

Needs the `ray` extra (pip install 'stallfree[ray]')."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

from stallfree.reference import Scheduler
from stallfree.testing.campaign import BATCH, Campaign, Tally, run
from stallfree.testing.campaign_ray import RayRunner

SEED_STEPS = 366_724  # the seed's campaign: 400 simulations, 366,724 steps
SCALE = 1000
WAYS = ("local, 1 job", "local, 2 jobs", "Ray, 1 worker", "Ray, 2 workers")
EXTRAPOLATED_WORKERS = (1, 2, 8, 32, 128, 512)


def local(jobs: int) -> Callable[[Campaign], tuple[Tally, float, float]]:
    def measure(campaign: Campaign) -> tuple[Tally, float, float]:
        started = time.perf_counter()
        tally = run(Campaign(campaign.sims, campaign.seed, campaign.factory, jobs=jobs))
        return tally, time.perf_counter() - started, 0.0

    return measure


def on_ray(workers: int) -> Callable[[Campaign], tuple[Tally, float, float]]:
    def measure(campaign: Campaign) -> tuple[Tally, float, float]:
        started = time.perf_counter()
        runner = RayRunner(workers=workers).connect()
        connected = time.perf_counter()
        try:
            tally = runner.run(campaign)
        finally:
            finished = time.perf_counter()
            runner.close()
        return tally, finished - connected, connected - started

    return measure


def work(tally: Tally) -> tuple[int, ...]:
    return tally.sims, tally.requests, tally.steps, tally.tokens, tally.checks


def rounds(campaign: Campaign, count: int) -> dict[str, list[tuple[Tally, float, float]]]:
    ways = dict(zip(WAYS, (local(1), local(2), on_ray(1), on_ray(2)), strict=True))
    results: dict[str, list[tuple[Tally, float, float]]] = {way: [] for way in WAYS}
    for number in range(count):
        for way, measure in ways.items():
            results[way].append(measure(campaign))
            tally = results[way][-1][0]
            if tally.violation is not None or work(tally) != work(results[WAYS[0]][0][0]):
                sys.exit(f"{way}, round {number + 1}: not the local pool's work: {work(tally)} {tally.violation}")
    return results


def table(results: dict[str, list[tuple[Tally, float, float]]]) -> dict[str, tuple[float, float]]:
    """Print the side-by-side table; return each way's (median wall s, median steps per worker CPU-s)."""
    print(f"{'way':<16} {'wall s':>7} {'start s':>8} {'steps/s':>9} {'steps/CPU-s':>12} {'vs local 1':>10}")
    medians: dict[str, tuple[float, float]] = {}
    for way, runs in results.items():
        wall = statistics.median(r[1] for r in runs)
        start = statistics.median(r[2] for r in runs)
        per_cpu = statistics.median(r[0].steps / r[0].cpu_seconds for r in runs)
        medians[way] = (wall, per_cpu)
        steps = runs[0][0].steps
        ratio = medians[WAYS[0]][0] / wall
        start_text = f"{start:.1f}" if start else "-"
        print(f"{way:<16} {wall:>7.2f} {start_text:>8} {steps / wall:>9,.0f} {per_cpu:>12,.0f} {ratio:>9.2f}x")
    return medians


def extrapolate(medians: dict[str, tuple[float, float]], steps: int, sims: int) -> None:
    """Print the hours of 1000x the seed's campaign: at the rates measured, and extrapolated to more workers."""
    target = SEED_STEPS * SCALE
    batches = -(-sims // BATCH)
    due = target / steps * batches
    print(f"\n{SCALE}x the seed's campaign: {target:,} steps (about {due:,.0f} batches of {BATCH})")
    for way in WAYS:
        wall, _ = medians[way]
        print(f"  at the measured rate, {way:<16} {duration(target / (steps / wall)):>9}")
    wall_1, per_cpu = medians["Ray, 1 worker"]
    batch_s = wall_1 / batches  # one worker's wall per batch, Ray's hand-off included
    overhead = max(wall_1 - medians[WAYS[0]][0], 0.0) / batches  # Ray's cost per batch over the local pool's
    print(f"  one Ray worker: {steps / wall_1:,.0f} steps/s here, {per_cpu:,.0f} per CPU-second; Ray adds "
          f"{overhead * 1000:.0f} ms to a batch of {batch_s:.2f} s")
    on_a_core = steps / batches / per_cpu + overhead  # one batch on a core of its own, Ray's hand-off included
    for workers in EXTRAPOLATED_WORKERS:
        print(f"  extrapolated, {workers:>4} worker(s), a core each {duration(due * on_a_core / workers):>9}")
    print("  (extrapolated: each worker a core of its own at the measured steps per CPU-second of a Ray worker,\n"
          "   plus Ray's measured cost per batch; the batches independent; not measured beyond this machine)")


def duration(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    campaign = Campaign(args.sims, args.seed, Scheduler)
    print(f"{args.sims:,} simulations, seed {args.seed}, {args.rounds} round(s), medians; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    results = rounds(campaign, args.rounds)
    medians = table(results)
    extrapolate(medians, results[WAYS[0]][0][0].steps, args.sims)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
