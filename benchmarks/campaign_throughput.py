"""Campaign throughput, monitor included: steps per second of the reference under the monitor.

    python benchmarks/campaign_throughput.py            # the base scale, 1 job and 2 jobs side by side
    python benchmarks/campaign_throughput.py --sims 40000 --jobs 2 --only   # 100x the base scale

Prints, per run: simulations, steps, wall seconds, steps/s in all (wall clock) and steps per
CPU-second of a worker (one core's rate, which other load on the machine slows less than wall time).
Repeats each configuration REPEATS times and prints the median."""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from stallfree.reference import Scheduler
from stallfree.testing.campaign import Campaign, Tally, run

SEED_SIMS = 500  # >= 400 simulations and >= 366,724 steps: the base scale
REPEATS = 3


def measure(sims: int, jobs: int, seed: int) -> tuple[Tally, float]:
    started = time.perf_counter()
    tally = run(Campaign(sims, seed, Scheduler, jobs=jobs))
    return tally, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=SEED_SIMS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--only", action="store_true", help="run only --jobs (default: 1 job and --jobs)")
    args = parser.parse_args()
    print(f"{'jobs':>4} {'sims':>7} {'steps':>12} {'wall s':>8} {'steps/s (wall)':>15} {'steps/CPU-s':>12}")
    for jobs in (args.jobs,) if args.only else (1, args.jobs):
        walls, cpu_rates = [], []
        for _ in range(args.repeats):
            tally, wall = measure(args.sims, jobs, args.seed)
            if tally.violation is not None:
                print(f"rule broken: {tally.violation}", file=sys.stderr)
                return 1
            walls.append(wall)
            cpu_rates.append(tally.steps / tally.cpu_seconds)
        wall = statistics.median(walls)
        print(f"{jobs:>4} {tally.sims:>7,} {tally.steps:>12,} {wall:>8.1f} {tally.steps / wall:>15,.0f} "
              f"{statistics.median(cpu_rates):>12,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
