"""The variants' cost per step (schedule() + complete()) beside the reference's, in one run: each in
the reference's incremental form (`variants.batched`, what the simulator runs) and in the readable
`Stepwise` rendering the faults are built on.

The reference benchmark's steady state (benchmarks/reference_step.py): 256 running decodes, one long
partial prompt, W = 10,000 waiting requests blocked on slots, budget 8,192; for the priority variant
the waiting requests are spread over the four priorities. Two states of the rotation variant: at the
full budget (every ready request fits), and with the budget set to 64 (the ready requests outnumber
it: each step sorts them by their last token). Rounds interleave the schedulers so that machine noise
hits all alike; medians and the ratio to the reference.

    python benchmarks/variants_step.py [--steps 2000] [--waiting 10000]
"""

from __future__ import annotations

import argparse
from typing import Any

from steptiming import BUDGET, NUM_DECODES, interleaved, loaded, print_medians

from stallfree.reference import Scheduler
from stallfree.variants.aligned import Aligned, BatchedAligned
from stallfree.variants.batched import Batched
from stallfree.variants.priority import BatchedPrioritized, Prioritized
from stallfree.variants.rotating import BatchedRotating, Rotating
from stallfree.variants.stepwise import Stepwise

DROPPED = 64


def with_priority(s: Any, rid: int) -> None:
    s.add(rid, 100, 100, rid % 4)


def dropped(factory: type, num_waiting: int) -> Any:
    s = loaded(factory, num_waiting)
    s.set_budget(DROPPED)
    return s



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--waiting", type=int, default=10_000)
    args = parser.parse_args()
    w = args.waiting
    schedulers = {
        "reference": loaded(Scheduler, w),
        "batched (the policy, incremental)": loaded(Batched, w),
        "aligned, b=16 (batched)": loaded(BatchedAligned, w),
        "rotating, full budget (batched)": loaded(BatchedRotating, w),
        f"rotating, budget {DROPPED} (batched)": dropped(BatchedRotating, w),
        "priority with aging (batched)": loaded(BatchedPrioritized, w, with_priority),
        "stepwise (the policy in steps)": loaded(Stepwise, w),
        "aligned, b=16 (stepwise)": loaded(Aligned, w),
        "rotating, full budget (stepwise)": loaded(Rotating, w),
        f"rotating, budget {DROPPED} (stepwise)": dropped(Rotating, w),
        "priority with aging (stepwise)": loaded(Prioritized, w, with_priority),
    }
    print(f"{NUM_DECODES} decodes, 1 partial prompt, {w:,} waiting; budget {BUDGET}; {args.steps} steps each")
    print_medians(interleaved(schedulers, args.steps, 10), "scheduler", 36)


if __name__ == "__main__":
    main()
