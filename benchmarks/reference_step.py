"""Reference scheduler: microseconds per step (schedule() + complete()) at serving scale.

256 running decodes, one long partial prompt and W waiting requests, budget 8,192. The waiting
requests are blocked (no slot), as under load; the cost must not grow with W. Prints the median and
quartiles per W, measured in one run, interleaved so machine noise hits every W alike. With `--base
REV`, the reference of that commit (read from git) runs beside the working tree's, interleaved too.

    python benchmarks/reference_step.py [--steps 2000] [--waiting 100,10000,100000] [--base REV]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path

from oldcode import copy_package
from steptiming import BUDGET, interleaved, loaded, print_medians

from stallfree.reference import Scheduler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--waiting", default="100,10000,100000")
    parser.add_argument("--base", default=None, help="git revision of a reference to run beside this one")
    args = parser.parse_args()
    sizes = [int(w) for w in args.waiting.split(",")]
    with tempfile.TemporaryDirectory() as where:
        codes = {"": Scheduler}
        if args.base is not None:
            copy_package(args.base, "reference", Path(where) / "base_reference")
            sys.path.insert(0, where)
            codes = {"now ": Scheduler, f"{args.base[:7]} ": importlib.import_module("base_reference").Scheduler}
        schedulers = {f"{label}{w}": loaded(cls, w) for w in sizes for label, cls in codes.items()}
        first = next(iter(schedulers.values()))
        plan = first.schedule()
        print(f"plan: {len(plan)} entries, {plan.num_tokens} tokens (budget {BUDGET})")
        first.complete(plan)
        print_medians(interleaved(schedulers, args.steps, 10), "waiting", 16)


if __name__ == "__main__":
    main()
