"""Overload: the conversation trace at 1x to 32x its arrival rate, three policies, budget 2,048,
full cost model (Llama 3.3 70B, 4 H100 SXM, FP8, 256 slots). Queues grow once arrivals outrun the
steps; under the reference the worst gap between a stream's tokens stays one step (DECODE-FIRST).

    python benchmarks/sim_overload.py [--jobs 2] [--budget 2048] [--limit N] [--plot docs/img] [--json FILE]
    python benchmarks/sim_overload.py --replot FILE --plot docs/img    # plots from a saved --json
"""

from __future__ import annotations

import argparse
from typing import Any

import simbench

from stallfree.sim.policies import COMPARED
from stallfree.sim.sweep import RATE_SCALES, TABLE_HEADER, rate_points, run_points, table_row


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", default="conv")
    parser.add_argument("--budget", type=int, default=2048)
    parser.add_argument("--limit", type=int, default=None)


def main() -> None:
    args = simbench.parser(__doc__, options, "overload-<trace>.png", "plot").parse_args()

    def run() -> list[dict[str, Any]]:
        points = rate_points(args.trace, COMPARED, args.budget, RATE_SCALES, args.limit)
        summaries = run_points(simbench.setup(), points, args.jobs)
        print(summaries[0].cost)
        print(TABLE_HEADER)
        for point, s in zip(points, summaries, strict=True):
            print(table_row(s, point.rate_scale))
        return [s.to_json() for s in summaries]

    rows = simbench.rows(args, run)
    if args.plot is not None:
        from stallfree.sim.plots import plot_rates

        path = plot_rates(rows, RATE_SCALES, args.plot / f"overload-{args.trace}.png")
        print(f"plot: {path}")


if __name__ == "__main__":
    main()
