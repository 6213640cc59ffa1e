"""Reference scheduler: microseconds per step (schedule() + complete()) at serving scale.

256 running decodes, one long partial prompt and W waiting requests, budget 8,192. The waiting
requests are blocked (no slot), as under load; the cost must not grow with W. Prints the median and
quartiles per W, measured in one run, interleaved so machine noise hits every W alike.

    python benchmarks/reference_step.py [--steps 2000] [--waiting 100,10000,100000]
"""

from __future__ import annotations

import argparse

from steptiming import BUDGET, interleaved, loaded, print_medians

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
    print_medians(interleaved(schedulers, args.steps, 10), "waiting", 8)


if __name__ == "__main__":
    main()
