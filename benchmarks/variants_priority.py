"""Time to first token by priority class, with and without aging, on both Azure 2023 traces with a
synthetic priority mix, beside first come first served (the reference), in one run.

Each request gets a priority from its rid (a fixed hash, so every policy sees the same mix): 40% at
0, 30% at 1, 20% at 2, 10% at 3. Arrivals --rate times as fast as the trace (default 4), so that
requests queue and the order of admission matters. Llama 3.3 70B, 4 x H100 SXM, fp8, full cost
model, budget 2048, --max-seqs slots (default 64, so that slots, not only KV, make requests wait).

    python benchmarks/variants_priority.py [--plot docs/img] [--rate 4] [--max-seqs 64] [--limit N]
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from stallfree.costs import Deployment, Roofline, gpu, model
from stallfree.faults.priority import NoAging
from stallfree.reference import Scheduler
from stallfree.sim.priorities import hashed_priority
from stallfree.sim.simulator import Variant, simulate
from stallfree.sim.stats import spread
from stallfree.sim.trace import load
from stallfree.spec import Config
from stallfree.variants.priority import Prioritized

SHARES = (40, 30, 20, 10)  # percent of requests at priority 0, 1, 2, 3
POLICIES = {
    "fcfs (reference)": Scheduler, "strict priority (NoAging)": NoAging, "aging, A=64 (Prioritized)": Prioritized,
}
TRACES = ("conv", "code")
MS = 1e3


priority_of = hashed_priority(SHARES)


def run(point: tuple[str, str, float, int, int | None]) -> dict[str, Any]:
    trace_name, name, rate, max_seqs, limit = point
    deployment = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8")
    trace = load(trace_name)
    trace = (trace.head(limit) if limit else trace).scaled(rate)
    config = Config(2048, max_seqs, deployment.kv_tokens)
    factory = POLICIES[name]
    variant = Variant(priority_of=priority_of) if factory is not Scheduler else None
    result = simulate(trace, factory, config, Roofline(deployment, "full"), name, variant=variant)
    classes: dict[int, list[tuple[float, float]]] = {}
    for s in result.streams:
        if s.ttft is not None:
            classes.setdefault(priority_of(s.request.rid), []).append((s.request.arrival, s.ttft))
    return {"trace": trace_name, "policy": name, "classes": classes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--rate", type=float, default=4.0)
    parser.add_argument("--max-seqs", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    points = [(t, name, args.rate, args.max_seqs, args.limit) for t in TRACES for name in POLICIES]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(run, points))
    print(f"budget 2048, {args.max_seqs} slots, arrivals x{args.rate:g}; priority mix {SHARES} % at 0..3")
    columns = "".join(f"{'p' + str(q) + ' p50':>10}{'p99':>9}" for q in range(4))
    print(f"{'trace':<6}{'policy':<28}{columns}  (ms)")
    for r in rows:
        cells = ""
        for q in range(4):
            s = spread(t for _, t in r["classes"].get(q, []))
            cells += f"{s.p50 * MS:>10.0f}{s.p99 * MS:>9.0f}" if s else f"{'-':>10}{'-':>9}"
        print(f"{r['trace']:<6}{r['policy']:<28}{cells}")
    if args.plot is not None:
        from stallfree.sim.variant_plots import plot_priority_ttft

        for trace in TRACES:
            panels = [(r["policy"], r["classes"]) for r in rows if r["trace"] == trace]
            print(f"plot: {plot_priority_ttft(panels, args.plot / f'priority-ttft-{trace}.png')}")


if __name__ == "__main__":
    main()
