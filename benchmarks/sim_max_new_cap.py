"""What reserving for max_tokens costs: each request reserves max_new = the cap (512 ... 8,192) and
stops at its real output length from the trace, against the oracle that reserves exactly the real
length. The reference, budget 2,048, 256 slots, full cost model (Llama 3.3 70B, 4 H100 SXM, FP8),
the conversation and code traces at 32x their arrival rate, so that the deployment is saturated and
throughput is what the steps can carry. Prints KV reserved versus used, requests running at once,
throughput, TTFT and TPOT percentiles, and the cap at which throughput falls below 95% and 90% of the
oracle's: the design's reversal condition, measured.

    python benchmarks/sim_max_new_cap.py [--jobs 2] [--rate-scale 32] [--limit N] [--plot docs/img] [--json FILE]
    python benchmarks/sim_max_new_cap.py --replot FILE --plot docs/img
"""

from __future__ import annotations

import argparse
from typing import Any

import simbench

from stallfree.sim.sweep import CAPS, cap_points, run_points

TRACES = ("conv", "code")
THRESHOLDS = (0.95, 0.90)


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = [f"{'trace':<6}{'cap':>7}{'tok/s':>8}{'vs oracle':>10}{'KV reserved':>12}{'KV used':>9}{'used/res':>9}"
           f"{'running':>8}{'TTFT p50':>10}{'TTFT p99':>10}{'TPOT p50':>9}{'TPOT p99':>9}{'truncated':>10}"]
    for r in rows:
        oracle = next(o for o in rows if o["trace"] == r["trace"] and o["max_new_cap"] is None)
        lat = r["latency_s"]
        cap = "oracle" if r["max_new_cap"] is None else f"{r['max_new_cap']:,}"
        out.append(
            f"{r['trace'].split(' x')[0]:<6}{cap:>7}{r['output_tokens_per_s']:>8,.0f}"
            f"{r['output_tokens_per_s'] / oracle['output_tokens_per_s']:>9.1%} {r['kv_reserved_mean']:>11,.0f}"
            f"{r['kv_used_mean']:>9,.0f}{r['kv_use_of_reserved']:>9.0%}{r['running_mean']:>8.1f}"
            f"{lat['ttft']['p50']:>9.1f}s{lat['ttft']['p99']:>9.1f}s{lat['tpot']['p50'] * 1e3:>7.1f}ms"
            f"{lat['tpot']['p99'] * 1e3:>7.1f}ms{r['truncated']:>10,}")
    return out


def reversal(rows: list[dict[str, Any]]) -> list[str]:
    """Per trace: the smallest cap whose throughput is below each threshold of the oracle's."""
    out = []
    for trace in sorted({r["trace"] for r in rows}):
        mine = [r for r in rows if r["trace"] == trace]
        oracle = next(r for r in mine if r["max_new_cap"] is None)
        capped = sorted((r for r in mine if r["max_new_cap"] is not None), key=lambda r: r["max_new_cap"])
        mean_out = oracle["output_tokens"] / max(1, oracle["finished"])
        for threshold in THRESHOLDS:
            below = next((r for r in capped if r["output_tokens_per_s"] < threshold * oracle["output_tokens_per_s"]),
                         None)
            if below is None:
                out.append(f"{trace}: throughput stays at or above {threshold:.0%} of the oracle's up to cap "
                           f"{capped[-1]['max_new_cap']:,}")
            else:
                cap = below["max_new_cap"]
                out.append(f"{trace}: throughput falls below {threshold:.0%} of the oracle's at cap {cap:,} "
                           f"(cap / mean real output {cap / mean_out:.0f}x; mean real output {mean_out:.0f} tokens)")
    return out


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--budget", type=int, default=2048)
    parser.add_argument("--rate-scale", type=float, default=32.0)
    parser.add_argument("--limit", type=int, default=None)


def main() -> None:
    args = simbench.parser(__doc__, options, "max-new-cap.png", "report and plot").parse_args()

    def run() -> list[dict[str, Any]]:
        points = cap_points(TRACES, (None, *CAPS), args.budget, args.rate_scale, args.limit)
        summaries = run_points(simbench.setup(), points, args.jobs)
        print(summaries[0].cost)
        return [s.to_json() for s in summaries]

    rows = simbench.rows(args, run)
    for line in [*table(rows), "", *reversal(rows)]:
        print(line)
    if args.plot is not None:
        from stallfree.sim.plots import plot_caps

        print(f"plot: {plot_caps(rows, args.plot / 'max-new-cap.png')}")


if __name__ == "__main__":
    main()
