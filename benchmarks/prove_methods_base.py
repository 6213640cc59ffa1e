"""Wall and CPU seconds of `stallfree prove --methods M` for each M, an earlier commit's tree (`--base`,
read from git into a temporary folder and run through its `src/` view) against the working tree's, side by
side in one run (the runs alternate, so load drifts hit both), with medians, their ratio and each run's
row count.

    python benchmarks/prove_methods_base.py [--base REV] [--methods z3 symbolic] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tree(rev: str, target: Path) -> Path:
    """`rev`'s files under `target`; its `src/` view, which the import path takes before the install."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "src"


def one(src: Path, method: str) -> tuple[float, float, int, int]:
    """(wall s, CPU s of the run, exit status, rows printed) of one prove."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "stallfree", "prove", "--jobs", "1", "--methods", method],
                          capture_output=True, text=True, check=False, env=env, cwd=src)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    rows = int(summary.split(" of ")[1].split()[0]) if " of " in summary else -1
    return wall, cpu, done.returncode, rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="main")
    parser.add_argument("--methods", nargs="+", default=["z3", "symbolic"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": tree(args.base, Path(tmp)), "after": ROOT / "src"}
        print(f"base {args.base}; load average {os.getloadavg()[0]:.1f} at the start")
        for method in args.methods:
            runs: dict[str, list[tuple[float, float, int, int]]] = {"before": [], "after": []}
            for _ in range(args.repeats):
                for side, src in trees.items():
                    runs[side].append(one(src, method))
            walls = {side: statistics.median(r[0] for r in rs) for side, rs in runs.items()}
            cpus = {side: statistics.median(r[1] for r in rs) for side, rs in runs.items()}
            for side, rs in runs.items():
                print(f"--methods {method:9} {side:6}: wall {walls[side]:6.1f} s, CPU {cpus[side]:6.1f} s "
                      f"(medians of {len(rs)}), rows {rs[0][3]}, exit {sorted({r[2] for r in rs})}")
            print(f"--methods {method:9} after/before: wall {walls['after'] / walls['before']:.2f}x, "
                  f"CPU {cpus['after'] / cpus['before']:.2f}x")
        print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
