"""Wall and CPU seconds of `stallfree prove --scheduler paged --methods z3` in this tree beside an earlier
commit's (`--base REV`, read from git into a temporary folder and run from its `src/` links), side by
side in one run: the runs alternate, so load drifts hit both. Prints each run, the medians, their ratio,
and how many claims each printed as holding.

    python benchmarks/paged_z3_prove.py --base REV [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from oldcode import ROOT

COMMAND = ["prove", "--scheduler", "paged", "--methods", "z3"]


def one(src: Path) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its summary line) of one prove run importing stallfree from `src`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-m", "stallfree", *COMMAND], capture_output=True, text=True, env=env,
                          check=False, cwd=src.parent)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    summary = next((line for line in done.stdout.splitlines() if re.search(r"\d+ of \d+ claims", line)),
                   f"exit {done.returncode}: {done.stderr.strip()[-200:]}")
    return wall, cpu, summary


def checkout(rev: str, where: Path) -> Path:
    """The tree of `rev` under `where` (git archive: no worktree, no branch touched); its `src/`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(where, filter="tar")
    return where / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="git revision to run beside this tree")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as where:
        trees = {"this tree": ROOT / "src", f"{args.base[:9]}": checkout(args.base, Path(where))}
        runs: dict[str, list[tuple[float, float, str]]] = {name: [] for name in trees}
        for r in range(args.repeats):
            for name, src in trees.items():
                wall, cpu, summary = one(src)
                runs[name].append((wall, cpu, summary))
                print(f"run {r + 1} {name:>10}: wall {wall:6.2f} s, CPU {cpu:6.2f} s; {summary}")
    medians = {name: (statistics.median(w for w, _, _ in rs), statistics.median(c for _, c, _ in rs))
               for name, rs in runs.items()}
    (new_wall, new_cpu), (old_wall, old_cpu) = medians.values()
    for name, (wall, cpu) in medians.items():
        print(f"median {name:>10}: wall {wall:6.2f} s, CPU {cpu:6.2f} s")
    print(f"ratio this tree / {args.base[:9]}: wall {new_wall / old_wall:.2f}x, CPU {new_cpu / old_cpu:.2f}x "
          f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
