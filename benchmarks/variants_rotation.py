"""Oldest-first against rotation when the budget drops below the running streams.

Part 1, the stall pattern: 12 streams decoding, the budget dropped from 16 to 4 at step 8 and raised
to 16 at step 48; which streams get a token each step (docs/img/rotation-stalls.png), and each
policy's longest run of steps without a token against DECODE-WAIT's bound ceil(12/4) - 1 = 2.

Part 2, the Azure conv trace (Llama 3.3 70B, 4 x H100 SXM, fp8, full cost model, 256 slots): budget
2048, dropped to --drop tokens for the --for seconds from --at (trace seconds after scaling); worst
gap between two tokens of a stream (p50/p99/max) and TTFT, oldest-first (Resizable) against
Rotating, in one run, arrivals --rate times as fast as the trace (default 4, so that more streams
run than the dropped budget).

    python benchmarks/variants_rotation.py [--plot docs/img] [--drop 32] [--at 300] [--for 120] [--rate 4]
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from stallfree.costs import Deployment, Roofline, gpu, model
from stallfree.sim.simulator import Variant, simulate
from stallfree.sim.summary import summarise
from stallfree.sim.trace import load
from stallfree.spec import Arrival, Config, Workload, play
from stallfree.spec.variants.budget_change import ROTATION_CONTRACT
from stallfree.spec.workload import BudgetChange
from stallfree.variants.rotating import Resizable, Rotating

STREAMS = 12
DROPS = ((8, 4), (48, 16))
POLICIES = {"oldest-first (Resizable)": Resizable, "rotation (Rotating)": Rotating}
MS = 1e3


def stall_pattern(factory: type) -> tuple[list[set[int]], int]:
    """The rids that got a token each step, and the longest run without one (checked: DECODE-FAIR
    and DECODE-WAIT are not, so oldest-first runs to the end)."""
    workload = Workload(Config(16, STREAMS, 1000), tuple(Arrival(i, 1, 60, 0) for i in range(STREAMS)),
                        tuple(BudgetChange(s, b) for s, b in DROPS))
    served: list[set[int]] = []
    longest = [0]

    def on_step(monitor: Any, facts: Any) -> None:
        served.append(set(facts.emitted_set))
        longest[0] = max(longest[0], max((r.steps for r in monitor.shadow.runs.values()), default=0))

    rules = [r for r in ROTATION_CONTRACT.ids if r not in ("DECODE-FAIR", "DECODE-WAIT")]
    play(workload, factory, rules, on_step=on_step, contract=ROTATION_CONTRACT)
    return served, longest[0]


def trace_run(point: tuple[str, int, float, float, int | None, float]) -> dict[str, Any]:
    name, drop, at, seconds, limit, rate = point
    deployment = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8")
    trace = load("conv")
    trace = (trace.head(limit) if limit else trace).scaled(rate)
    config = Config(2048, 256, deployment.kv_tokens)
    variant = Variant(budgets=((at, drop), (at + seconds, 2048)))
    result = simulate(trace, POLICIES[name], config, Roofline(deployment, "full"), name, variant=variant)
    s = summarise(result)
    gap, ttft = s.latency["max_gap"], s.latency["ttft"]
    assert gap is not None and ttft is not None
    return {"policy": name, "gap": (gap.p50 * MS, gap.p99 * MS, gap.max * MS), "ttft": (ttft.p50 * MS, ttft.p99 * MS)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--drop", type=int, default=32)
    parser.add_argument("--at", type=float, default=300.0)
    parser.add_argument("--for", dest="seconds", type=float, default=120.0)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--rate", type=float, default=4.0, help="arrival rate scale (default 4)")
    args = parser.parse_args()
    panels = []
    bound = -(-STREAMS // DROPS[0][1]) - 1
    for name, factory in POLICIES.items():
        served, longest = stall_pattern(factory)
        panels.append((f"{name}: longest run without a token {longest} steps (DECODE-WAIT bound {bound})", served))
        print(f"stall pattern, {name}: longest run without a token {longest} steps; bound ceil(12/4) - 1 = {bound}")
    if args.plot is not None:
        from stallfree.sim.variant_plots import plot_stalls

        print(f"plot: {plot_stalls(panels, STREAMS, DROPS, args.plot / 'rotation-stalls.png')}")
    points = [(name, args.drop, args.at, args.seconds, args.limit, args.rate) for name in POLICIES]
    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(trace_run, points))
    print(f"conv trace x{args.rate:g}, budget 2048 dropped to {args.drop} over [{args.at:g} s, "
          f"{args.at + args.seconds:g} s)")
    print(f"{'policy':<28}{'gap p50':>9}{'p99':>9}{'max':>10}{'TTFT p50':>10}{'p99':>9}  (ms)")
    for r in rows:
        g, t = r["gap"], r["ttft"]
        print(f"{r['policy']:<28}{g[0]:>9.1f}{g[1]:>9.1f}{g[2]:>10.1f}{t[0]:>10.1f}{t[1]:>9.1f}")


if __name__ == "__main__":
    main()
