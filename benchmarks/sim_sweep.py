"""Policy comparison: budgets 512..16,384 x three policies x both Azure 2023 traces, full cost
model, Llama 3.3 70B on 4 H100 SXM in FP8, 256 slots, KV from memory. Prints one row per point
(milliseconds) and writes the budget plots.

    python benchmarks/sim_sweep.py [--jobs 2] [--limit N] [--plot docs/img] [--json FILE]
    python benchmarks/sim_sweep.py --replot FILE --plot docs/img    # plots from a saved --json

About 10 minutes on 2 cores for the full traces.
"""

from __future__ import annotations

import argparse
from typing import Any

import simbench

from stallfree.sim.policies import COMPARED
from stallfree.sim.sweep import BUDGETS, TABLE_HEADER, budget_points, run_points, table_row

TRACES = ("conv", "code")


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=None, help="only the first N requests of each trace")
    parser.add_argument("--mode", default="full", choices=("floor", "full"))


def main() -> None:
    args = simbench.parser(__doc__, options, "budget-<trace>.png", "plot").parse_args()

    def run() -> list[dict[str, Any]]:
        summaries = run_points(simbench.setup(args.mode), budget_points(TRACES, COMPARED, BUDGETS, args.limit),
                               args.jobs)
        print(summaries[0].cost)
        print(TABLE_HEADER)
        for s in summaries:
            print(table_row(s))
        return [s.to_json() for s in summaries]

    rows = simbench.rows(args, run)
    if args.plot is not None:
        from stallfree.sim.plots import plot_budgets

        for trace in TRACES:
            path = plot_budgets([r for r in rows if r["trace"].startswith(trace)], args.plot / f"budget-{trace}.png")
            print(f"plot: {path}")


if __name__ == "__main__":
    main()
