"""Wall time of the default `stallfree conform` run (60 configs x 25 examples, every rule) on the
reference, and on the two documented examples, side by side.

    python benchmarks/conform_default.py [--examples N] [--repeats R]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from conformtiming import arguments, time_conform

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "docs" / "examples"
TARGETS = ("stallfree.reference:Scheduler", "prefill_first:PrefillFirst", "skip_ahead:SkipAhead")


def main() -> None:
    args = arguments(__doc__)
    sys.path.insert(0, str(EXAMPLES_DIR))
    os.chdir(EXAMPLES_DIR)
    time_conform(TARGETS, args, lambda report: f"{report.runs:>5} runs {report.steps:>7} steps  broken: "
                 f"{', '.join(report.counterexamples) or 'none'}")


if __name__ == "__main__":
    main()
