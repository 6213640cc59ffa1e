"""Wall and CPU seconds of a plain `stallfree prove`, serial (--jobs 1) against parallel (--jobs 2), side
by side in one run (the runs alternate, so load drifts hit both), with medians; and whether the two
printed the same rows and JSON (seconds aside, order included). The target: wall within 60 s on an idle
2-core machine.

    python benchmarks/prove_wall.py [--repeats 3] [--jobs 1 2] [-- extra prove flags]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one(jobs: int, extra: list[str], out: Path) -> tuple[float, float, int, list[dict], list[str]]:
    """(wall s, CPU s of the run and its children, exit status, the JSON rows, the table's lines)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "stallfree", "prove", "--jobs", str(jobs), "--json", str(out), *extra],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows = json.loads(out.read_text()) if out.exists() else []
    for row in rows:  # what varies from run to run: the seconds, and the rate a model check ran at
        row.pop("seconds", None)
        row["detail"] = re.sub(r"[\d,.]+ states/s", "_ states/s", row.get("detail") or "")
    table = [line[:98] for line in done.stdout.splitlines()]  # the seconds column cut off
    return wall, cpu, done.returncode, rows, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("extra", nargs="*", help="more flags for stallfree prove (after --)")
    args = parser.parse_args()
    walls: dict[int, list[float]] = {j: [] for j in args.jobs}
    cpus: dict[int, list[float]] = {j: [] for j in args.jobs}
    seen: dict[int, tuple[int, list[dict], list[str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for jobs in args.jobs:
                wall, cpu, code, rows, table = one(jobs, args.extra, Path(tmp) / f"rows-{jobs}.json")
                walls[jobs].append(wall)
                cpus[jobs].append(cpu)
                seen.setdefault(jobs, (code, rows, table))
                print(f"run {repeat + 1}: --jobs {jobs}: wall {wall:6.1f} s, CPU {cpu:6.1f} s, exit {code}, "
                      f"{len(rows)} rows, load {os.getloadavg()[0]:.1f}", flush=True)
    first = args.jobs[0]
    for jobs in args.jobs:  # kept for a diff when they differ
        (Path(tempfile.gettempdir()) / f"prove_wall-{jobs}.json").write_text(json.dumps(seen[jobs][1], indent=1))
    for jobs in args.jobs:
        same = seen[jobs] == seen[first]
        print(f"--jobs {jobs}: median wall {statistics.median(walls[jobs]):6.1f} s, median CPU "
              f"{statistics.median(cpus[jobs]):6.1f} s, wall ratio to --jobs {first} "
              f"{statistics.median(walls[jobs]) / statistics.median(walls[first]):.2f}; rows, table and exit "
              f"{'the same' if same else 'DIFFERENT'} as --jobs {first}")
    return 0 if all(seen[j] == seen[first] for j in args.jobs) else 1


if __name__ == "__main__":
    sys.exit(main())
