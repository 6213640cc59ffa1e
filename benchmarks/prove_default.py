"""Wall and CPU seconds of the default `stallfree prove` (no flags), an earlier commit's tree (`--base`, read
from git into a temporary folder and run through its `src/` view) against the working tree's, interleaved
in one run (so load drifts hit both), N rounds, with medians and their ratio; and whether the two printed
the same table (claim, method, bound, result: the seconds column cut off) and exit status. Each side's
last output is kept as /tmp/prove-speed-{before,after}.txt for a diff.

    python benchmarks/prove_default.py [--base REV] [--rounds 3]
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

from prove_methods_base import ROOT, tree  # run as a script, its folder is on the path; the base's tree as there


def child_run(command: list[str], src: Path) -> tuple[float, float, int, str]:
    """(wall s, CPU s of the run and its workers, exit status, stdout) of `command` run with `src` first
    on the import path."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=src,
                          env={**os.environ, "PYTHONPATH": str(src)})
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode, done.stdout


def table(stdout: str) -> list[str]:
    """The table's lines without the seconds column (the last field of a row), and every other line."""
    return [line.rsplit(None, 1)[0] if line[-1:].isdigit() else line for line in stdout.splitlines() if line]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    seen: dict[str, tuple[int, list[str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": tree(args.base, Path(tmp)), "after": ROOT / "src"}
        print(f"base {args.base}; load average {os.getloadavg()[0]:.1f} at the start", flush=True)
        for round_ in range(args.rounds):
            for side, src in trees.items():
                wall, cpu, code, stdout = child_run([sys.executable, "-m", "stallfree", "prove"], src)
                runs[side].append((wall, cpu))
                seen[side] = (code, table(stdout))
                Path(f"/tmp/prove-speed-{side}.txt").write_text(stdout + f"exit {code}\n")
                print(f"round {round_ + 1} {side:6}: wall {wall:6.1f} s, CPU {cpu:6.1f} s, exit {code}, "
                      f"load {os.getloadavg()[0]:.1f}; {stdout.strip().splitlines()[-1] if stdout.strip() else ''}",
                      flush=True)
    walls = {side: statistics.median(r[0] for r in rs) for side, rs in runs.items()}
    cpus = {side: statistics.median(r[1] for r in rs) for side, rs in runs.items()}
    for side in runs:
        print(f"{side:6}: median wall {walls[side]:6.1f} s, median CPU {cpus[side]:6.1f} s ({args.rounds} rounds)")
    same = seen["before"] == seen["after"]
    print(f"after/before: wall {walls['after'] / walls['before']:.2f}x, CPU {cpus['after'] / cpus['before']:.2f}x; "
          f"table and exit {'the same' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
