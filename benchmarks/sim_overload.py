"""Overload: the conversation trace at 1x to 32x its arrival rate, three policies, budget 2,048,
full cost model (Llama 3.3 70B, 4 H100 SXM, FP8, 256 slots). Queues grow once arrivals outrun the
steps; under the reference the worst gap between a stream's tokens stays one step (DECODE-FIRST).

    python benchmarks/sim_overload.py [--jobs 2] [--budget 2048] [--limit N] [--plot docs/img] [--json FILE]
    python benchmarks/sim_overload.py --replot FILE --plot docs/img    # plots from a saved --json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from stallfree.costs import Deployment, gpu, model
from stallfree.sim.policies import COMPARED
from stallfree.sim.sweep import RATE_SCALES, TABLE_HEADER, Setup, rate_points, run_points, table_row

MAX_SEQS = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--trace", default="conv")
    parser.add_argument("--budget", type=int, default=2048)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--plot", type=Path, default=None, help="folder for overload-<trace>.png")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--replot", type=Path, default=None, help="skip the runs: plot a saved --json")
    args = parser.parse_args()
    if args.replot is not None:
        rows = json.loads(args.replot.read_text())
    else:
        setup = Setup(Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8"), "full", MAX_SEQS)
        points = rate_points(args.trace, COMPARED, args.budget, RATE_SCALES, args.limit)
        summaries = run_points(setup, points, args.jobs)
        print(summaries[0].cost)
        print(TABLE_HEADER)
        for point, s in zip(points, summaries, strict=True):
            print(table_row(s, point.rate_scale))
        rows = [s.to_json() for s in summaries]
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.plot is not None:
        from stallfree.sim.plots import plot_rates

        path = plot_rates(rows, RATE_SCALES, args.plot / f"overload-{args.trace}.png")
        print(f"plot: {path}")


if __name__ == "__main__":
    main()
