"""Wall time of the default `stallfree conform` run (60 configs x 25 examples, every rule) on the
reference, and on the two documented examples, side by side.

    python benchmarks/conform_default.py [--examples N] [--repeats R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from stallfree.conformance.kit import DEFAULT_EXAMPLES, conform

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "docs" / "examples"
TARGETS = ("stallfree.reference:Scheduler", "prefill_first:PrefillFirst", "skip_ahead:SkipAhead")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, str(EXAMPLES_DIR))
    os.chdir(EXAMPLES_DIR)
    times: dict[str, list[float]] = {t: [] for t in TARGETS}
    for _ in range(args.repeats):
        for target in TARGETS:
            started = time.perf_counter()
            report = conform(target, examples=args.examples)
            times[target].append(time.perf_counter() - started)
            broken = ", ".join(report.counterexamples) or "none"
            print(f"{target:<32} {times[target][-1]:6.1f} s  {report.runs:>5} runs {report.steps:>7} steps  "
                  f"broken: {broken}", flush=True)
    for target in TARGETS:
        print(f"median {target:<32} {statistics.median(times[target]):6.1f} s over {args.repeats} run(s)")


if __name__ == "__main__":
    main()
