"""Monitor throughput on the contract's 400-workload campaign, reference included.

Runs the same workloads twice per round, interleaved: the reference alone (driven through the
plain protocol, no checks) and the reference under the monitor (every rule checked every step).
Prints steps/s for each and the monitor's share of the time.

    python benchmarks/monitor_campaign.py [--workloads 400] [--rounds 3] [--seed 20231116]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import time

from stallfree.reference import Scheduler
from stallfree.spec import Workload, play
from stallfree.testing.generate import random_workload


def bare(workload: Workload) -> int:
    """Play the workload with no monitor: adds at their steps, schedule/complete until idle."""
    cfg = workload.config
    s = Scheduler(cfg.token_budget, cfg.max_seqs, cfg.kv_tokens)
    arrivals = sorted(workload.requests, key=lambda a: a.arrival_step)
    i = steps = 0
    while True:
        while i < len(arrivals) and arrivals[i].arrival_step <= steps:
            a = arrivals[i]
            with contextlib.suppress(ValueError, TypeError):  # never-fit requests are refused
                s.add(a.rid, a.prompt_len, a.max_new)
            i += 1
        if i == len(arrivals) and s.is_idle:
            return steps
        s.complete(s.schedule())
        steps += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20231116)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    workloads = [random_workload(rng) for _ in range(args.workloads)]
    rates: dict[str, list[float]] = {"reference alone": [], "reference + monitor": []}
    steps = 0
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        steps = sum(bare(w) for w in workloads)
        rates["reference alone"].append(steps / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        monitored = sum(play(w, Scheduler).steps for w in workloads)
        rates["reference + monitor"].append(monitored / (time.perf_counter() - t0))
        assert monitored == steps
    print(f"{args.workloads} workloads, {steps:,} steps, {args.rounds} rounds (median of rounds)")
    for name, values in rates.items():
        print(f"{name:<22} {statistics.median(values):>10,.0f} steps/s")
    alone, checked = (statistics.median(v) for v in rates.values())
    print(f"monitor share of time   {1 - checked / alone:>9.0%}")


if __name__ == "__main__":
    main()
