"""The monitor's cost of judging stops and cancels, on workloads without them: the current spec and
reference against the ones before stops and cancels (read from git into temporary packages), the
same plain campaign workloads played under every rule, interleaved in one process. Prints steps per
CPU-second of each and their ratio (the new code checks one more rule, CANCEL, in two predicates).

    python benchmarks/monitor_lifecycle.py [--workloads 120] [--rounds 5] [--base REV]
"""

from __future__ import annotations

import argparse
import importlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from oldcode import copy_package, git, newest

from stallfree.reference import Scheduler
from stallfree.spec import play
from stallfree.testing.generate import random_workload


def before_lifecycle() -> str:
    """The newest commit whose spec has no capability module: the code before stops and cancels."""
    return newest("spec", lambda rev: "spec/capability.py" not in git("ls-tree", "--name-only", rev, "spec/").split())


def load_old(rev: str, where: Path) -> tuple[Any, Any]:
    """(play, Scheduler) at `rev`, as the packages old_spec and old_reference under `where` (the old
    reference's absolute imports of stallfree.spec are pointed at old_spec)."""
    for folder, package in (("spec", "old_spec"), ("reference", "old_reference")):
        copy_package(rev, folder, where / package, {"stallfree.spec": "old_spec"})
    sys.path.insert(0, str(where))
    return importlib.import_module("old_spec").play, importlib.import_module("old_reference").Scheduler


def rate(play_fn: Any, factory: Any, workloads: list[Any]) -> float:
    started = time.process_time()
    steps = sum(play_fn(w, factory).steps for w in workloads)
    return steps / (time.process_time() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", default=None, help="git revision to compare (default: the newest without "
                        "spec/capability.py)")
    args = parser.parse_args()
    rev = args.base or before_lifecycle()
    workloads = [random_workload(random.Random(f"20231116:{i}")) for i in range(args.workloads)]
    with tempfile.TemporaryDirectory() as where:
        old_play, old_scheduler = load_old(rev, Path(where))
        before, now = [], []
        for _ in range(args.rounds):  # interleaved, so that machine noise hits both alike
            before.append(rate(old_play, old_scheduler, workloads))
            now.append(rate(play, Scheduler, workloads))
    b, n = statistics.median(before), statistics.median(now)
    print(f"before: spec and reference at {rev[:12]}; now: the working tree; {args.workloads} plain workloads, "
          f"every rule checked")
    print(f"before {b:,.0f} steps per CPU-second (median of {args.rounds}), now {n:,.0f}: now/before {n / b:.3f}")


if __name__ == "__main__":
    main()
