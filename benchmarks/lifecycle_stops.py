"""CPU seconds of the default prove's stop and cancel model check (2,3,8,4,3,3+stops,cancels, the
reference), an earlier commit's tree (`--base`, read from git and run through its `src/` view) against
the working tree's, interleaved in one run, N rounds, with medians and their ratio; and whether both
reached the same states and transitions, depth and coverage counts.

    python benchmarks/lifecycle_stops.py [--base REV] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from prove_methods_base import ROOT, tree  # run as a script, its folder is on the path

CHECK = ("from dataclasses import replace; from stallfree.proofs.explicit import modelcheck; "
         "from stallfree.proofs.explicit.bounds import Bounds; "
         "r = modelcheck.check(replace(Bounds.parse('2,3,8,4,3,3'), lifecycle=True), compact=True); "
         "print(r.verdict, r.states, r.transitions, r.depth, [c.transitions for c in r.coverage], "
         "r.longest_steps, r.drain_bound)")


def one(src: Path) -> tuple[float, str]:
    """(CPU s, what the check reached) of one model check with `src` first on the import path."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, cwd=src,
                          env={**os.environ, "PYTHONPATH": str(src)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    cpus: dict[str, list[float]] = {"before": [], "after": []}
    seen: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": tree(args.base, Path(tmp)), "after": ROOT / "src"}
        print(f"base {args.base}; load average {os.getloadavg()[0]:.1f} at the start", flush=True)
        for round_ in range(args.rounds):
            for side, src in trees.items():
                cpu, seen[side] = one(src)
                cpus[side].append(cpu)
                print(f"round {round_ + 1} {side:6}: CPU {cpu:5.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    medians = {side: statistics.median(c) for side, c in cpus.items()}
    same = seen["before"] == seen["after"]
    print(f"median CPU {medians['before']:.1f} s before, {medians['after']:.1f} s after "
          f"({medians['after'] / medians['before']:.2f}x); states, transitions, depth and coverage "
          f"{'the same' if same else 'DIFFERENT'}: {seen['after'][:80]}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
