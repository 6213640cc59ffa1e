"""Reference scheduler: microseconds per step (schedule() + complete()) at serving scale.

256 running decodes, one long partial prompt and W waiting requests, budget 8,192. The waiting
requests are blocked (no slot), as under load; the cost must not grow with W. Prints the median and
quartiles per W, measured in one run, interleaved so machine noise hits every W alike.

    python benchmarks/reference_step.py [--steps 2000] [--waiting 100,10000,100000]
"""

from __future__ import annotations

import argparse
import statistics

from steptiming import BUDGET, loaded, time_steps

from stallfree.reference import Scheduler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--waiting", default="100,10000,100000")
    args = parser.parse_args()
    sizes = [int(w) for w in args.waiting.split(",")]
    schedulers = {w: loaded(Scheduler, w) for w in sizes}
    first = next(iter(schedulers.values()))
    plan = first.schedule()
    print(f"plan: {len(plan)} entries, {plan.num_tokens} tokens (budget {BUDGET})")
    first.complete(plan)
    samples: dict[int, list[float]] = {w: [] for w in sizes}
    rounds = 10
    for _ in range(rounds):  # interleave the sizes so noise is shared
        for w, s in schedulers.items():
            samples[w] += time_steps(s, args.steps // rounds)
    base = statistics.median(samples[sizes[0]])
    print(f"{'waiting':>8} {'median us':>10} {'p25':>8} {'p75':>8} {'vs first':>9}")
    for w in sizes:
        q = statistics.quantiles(samples[w], n=4)
        med = statistics.median(samples[w])
        print(f"{w:>8} {med:>10.1f} {q[0]:>8.1f} {q[2]:>8.1f} {med / base:>8.2f}x")


if __name__ == "__main__":
    main()
