"""Reference scheduler: microseconds per step (schedule() + complete()) at serving scale.

256 running decodes, one long partial prompt and W waiting requests, budget 8,192. The waiting
requests are blocked (no slot), as under load; the cost must not grow with W. Prints the median and
quartiles per W, measured in one run, interleaved so machine noise hits every W alike.

    python benchmarks/reference_step.py [--steps 2000] [--waiting 100,10000,100000]
"""

from __future__ import annotations

import argparse
import statistics

from steptiming import time_steps

from stallfree.reference import Scheduler

BUDGET = 8192
NUM_DECODES = 256
LONG = 10**12  # a prompt and max_new that outlast the benchmark


def loaded(num_waiting: int) -> Scheduler:
    """A scheduler in the steady state: 256 ready requests, one partial prompt, the rest waiting."""
    s = Scheduler(token_budget=BUDGET, max_seqs=NUM_DECODES + 1, kv_tokens=2**62)
    for rid in range(NUM_DECODES):
        s.add(rid, 1, LONG)
    s.complete(s.schedule())  # all 256 prompts in one step: now all ready
    s.add(NUM_DECODES, LONG, 1)  # the long prompt: partial from now on
    s.complete(s.schedule())
    for rid in range(num_waiting):
        s.add(NUM_DECODES + 1 + rid, 100, 100)
    return s



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--waiting", default="100,10000,100000")
    args = parser.parse_args()
    sizes = [int(w) for w in args.waiting.split(",")]
    schedulers = {w: loaded(w) for w in sizes}
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
