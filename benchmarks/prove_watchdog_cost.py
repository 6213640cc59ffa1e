"""What prove's countdown and watchdog cost a `--scheduler` model check: this checkout's `stallfree prove`
against another checkout's (its venv's python), interleaved, in CPU seconds (user + system, the command
and every process it waited for: the watchdog's child and its workers), which a loaded machine moves far
less than wall time. docs/testing.md quotes:

    python benchmarks/prove_watchdog_cost.py --base /work/main/.venv/bin/python --runs 5

Each run: `stallfree prove --methods model --jobs 1 --hidden none --quiet` from tests/, on
`hostile_isolated:Rewrites` (the reservation design, bound 2,3,8,3,3,3) and `hostile_isolated:PagedHonest`
(the paged design, bound 2,2,6,3,3,3); the medians and their ratio, and each run's figure."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
CASES = {"Rewrites": "2,3,8,3,3,3", "PagedHonest": "2,2,6,3,3,3"}


def cpu_seconds(python: str, scheduler: str, bound: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([python, "-m", "stallfree", "prove", "--methods", "model", "--jobs", "1", "--bound", bound,
                    "--hidden", "none", "--scheduler", f"hostile_isolated:{scheduler}", "--quiet"],
                   stdout=subprocess.DEVNULL, cwd=TESTS, check=True,
                   env={**os.environ, "PYTHONPATH": str(TESTS)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the python of the checkout compared against")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    pythons = {"base": args.base, "this": sys.executable}
    got: dict[tuple[str, str], list[float]] = {(who, case): [] for who in pythons for case in CASES}
    for _ in range(args.runs):
        for case, bound in CASES.items():
            for who, python in pythons.items():
                got[who, case].append(cpu_seconds(python, case, bound))
    for case in CASES:
        base, this = statistics.median(got["base", case]), statistics.median(got["this", case])
        print(f"{case}: base {base:.2f} s, this {this:.2f} s, ratio {this / base:.3f} "
              f"(base {[round(x, 2) for x in got['base', case]]}, this {[round(x, 2) for x in got['this', case]]})")


if __name__ == "__main__":
    main()
