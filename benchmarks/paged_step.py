"""Paged scheduler against the reference: microseconds per step (schedule() + complete()), side by side.

The reference's serving-scale state (benchmarks/reference_step.py): 256 running decodes, one long
partial prompt and W waiting requests blocked on slots, budget 8,192. The paged scheduler gets the
same requests with 16-token blocks and the default watermark over a pool large enough that nothing
is preempted, so the cost measured is the block accounting every step pays. Both run interleaved in
one process so machine noise hits them alike; prints medians, quartiles and the ratio. With `--base
REV`, the paged scheduler of that commit (read from git) runs beside them too.

    python benchmarks/paged_step.py [--steps 2000] [--waiting 10000] [--base REV]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path

from oldcode import copy_package
from steptiming import BUDGET, interleaved, loaded, print_medians

from stallfree.paged import Scheduler as Paged
from stallfree.reference import Scheduler as Reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument("--base", default=None, help="git revision of a paged scheduler to run beside this one")
    args = parser.parse_args()
    schedulers = {"reference": loaded(Reference, args.waiting), "paged": loaded(Paged, args.waiting)}
    if args.base is not None:
        with tempfile.TemporaryDirectory() as where:  # the module is loaded before the folder goes
            copy_package(args.base, "paged", Path(where) / "base_paged")
            sys.path.insert(0, where)
            base = importlib.import_module("base_paged").Scheduler
        schedulers[f"paged@{args.base[:7]}"] = loaded(base, args.waiting)
    for name, s in schedulers.items():
        plan = s.schedule()
        print(f"{name}: plan of {len(plan)} entries, {plan.num_tokens} tokens (budget {BUDGET}); "
              f"{len(s.running)} running, {len(s.waiting)} waiting")
        s.complete(plan)
    print_medians(interleaved(schedulers, args.steps, 20), "scheduler", 14)
    paged = schedulers["paged"]
    print(f"paged: {paged.num_preemptions} preemptions, {paged.free_blocks} of {paged.num_blocks} blocks free")


if __name__ == "__main__":
    main()
