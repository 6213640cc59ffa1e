"""The vacuity table of docs/proofs.md: for each claim's case (`proofs/explicit/coverage.py`), the
transitions that reached it at each default bound of `stallfree prove` (the first bound, with stops and
cancels, and the coverage bound), or vacuous / excluded / - (not run).

    python benchmarks/coverage_table.py [--bounds B,S,K,R,P,M ...]
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from stallfree.proofs import suite
from stallfree.proofs.explicit import coverage, modelcheck
from stallfree.proofs.explicit.bounds import Bounds

CELL = {coverage.VACUOUS: "**vacuous**", coverage.EXCLUDED: "excluded", coverage.NO_ACTION: "-"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bounds", nargs="+", default=[suite.DEFAULT_BOUND, suite.DEFAULT_BOUND + "+",
                                                        suite.COVERAGE_BOUND],
                        help="bounds to count at (a trailing + adds stops and cancels)")
    args = parser.parse_args()
    reports = []
    for text in args.bounds:
        bounds = Bounds.parse(text.rstrip("+"))
        result = modelcheck.check(replace(bounds, lifecycle=text.endswith("+")), compact=True)
        assert result.holds and result.coverage is not None, text
        reports.append(result.coverage)
    labels = [t.rstrip("+") + ("+stops,cancels" if t.endswith("+") else "") for t in args.bounds]
    print("| claim | case | " + " | ".join(labels) + " |")
    print("|---|---|" + "---|" * len(labels))
    for i, case in enumerate(coverage.CASES):
        name = case.name + (f" (excluded by {case.excluded_by})" if case.excluded_by else "")
        cells = [CELL.get(r[i].status, f"{r[i].transitions:,}") for r in reports]
        print(f"| {case.claim} | {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
