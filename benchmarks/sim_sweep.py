"""Policy comparison: budgets 512..16,384 x three policies x both Azure 2023 traces, full cost
model, Llama 3.3 70B on 4 H100 SXM in FP8, 256 slots, KV from memory. Prints one row per point
(milliseconds) and writes the budget plots.

    python benchmarks/sim_sweep.py [--jobs 2] [--limit N] [--plot docs/img] [--json FILE]
    python benchmarks/sim_sweep.py --replot FILE --plot docs/img    # plots from a saved --json

About 10 minutes on 2 cores for the full traces.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from stallfree.costs import Deployment, gpu, model
from stallfree.sim.policies import COMPARED
from stallfree.sim.sweep import BUDGETS, TABLE_HEADER, Setup, budget_points, run_points, table_row

TRACES = ("conv", "code")
MAX_SEQS = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="only the first N requests of each trace")
    parser.add_argument("--mode", default="full", choices=("floor", "full"))
    parser.add_argument("--plot", type=Path, default=None, help="folder for budget-<trace>.png")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--replot", type=Path, default=None, help="skip the runs: plot a saved --json")
    args = parser.parse_args()
    if args.replot is not None:
        rows = json.loads(args.replot.read_text())
    else:
        setup = Setup(Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8"), args.mode, MAX_SEQS)
        summaries = run_points(setup, budget_points(TRACES, COMPARED, BUDGETS, args.limit), args.jobs)
        print(summaries[0].cost)
        print(TABLE_HEADER)
        for s in summaries:
            print(table_row(s))
        rows = [s.to_json() for s in summaries]
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.plot is not None:
        from stallfree.sim.plots import plot_budgets

        for trace in TRACES:
            path = plot_budgets([r for r in rows if r["trace"].startswith(trace)], args.plot / f"budget-{trace}.png")
            print(f"plot: {path}")


if __name__ == "__main__":
    main()
