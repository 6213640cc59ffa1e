"""Reservation against paged on the Azure conv and code traces: the reversal condition as a number.

Both designs on the same cost model and KV pool (Llama 3.3 70B on 4 x H100 SXM, FP8 weights, BF16
KV: the `simulate` defaults), budget 2,048, under the cap model (sim/designs.py): each request sent
with max_tokens = cap, stopping at its real output length. Swept over caps and arrival rates; the
exact max_new (no cap: what a reservation oracle would reserve) is the baseline row. A second slot
count (--slots-high) shows the paged design where it admits enough to preempt.

Prints one row per run and the crossover per trace and rate; writes every figure as JSON (--json)
and the plots (--plots DIR).

    python benchmarks/designs_sweep.py [--caps 512,1024,2048,4096,8192] [--rates 1,4,16]
        [--json designs.json] [--plots docs/img]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from stallfree.costs import Deployment, Roofline
from stallfree.costs.presets import gpu, model
from stallfree.sim.designs import DesignRun, run_design
from stallfree.sim.trace import load
from stallfree.spec import Config

BUDGET = 2048
SLOTS = 256
SWEPT = ("reservation", "paged")  # the prefix design is compared on shared prompts: benchmarks/prefix_designs.py
WIN = 1.05  # paged "beats" reservation when its throughput is 5% higher


def row(trace: str, slots: int, r: DesignRun) -> dict[str, object]:
    s, st = r.summary, r.stats
    ttft, tpot = s.latency["ttft"], s.latency["tpot"]
    return {
        "trace": trace, "slots": slots, "design": st.design, "cap": st.cap, "rate": st.rate_scale,
        "requests": s.num_requests, "finished": s.num_finished, "mean_running": round(st.mean_running, 1),
        "max_running": st.max_running, "kv_held": round(st.kv_held, 3), "kv_used": round(st.kv_used, 3),
        "tokens_per_s": round(s.output_tokens_per_second, 1),
        "ttft_p50_ms": round(ttft.p50 * 1e3, 1) if ttft else None,
        "ttft_p99_ms": round(ttft.p99 * 1e3, 1) if ttft else None,
        "tpot_p50_ms": round(tpot.p50 * 1e3, 2) if tpot else None,
        "tpot_p99_ms": round(tpot.p99 * 1e3, 2) if tpot else None,
        "preemptions": st.preemptions, "recomputed_tokens": st.recomputed_tokens,
        "recompute_s": round(st.recompute_seconds, 2), "busy_s": round(st.busy_seconds, 1),
    }


def show(r: dict[str, object]) -> str:
    cap = "exact" if r["cap"] is None else r["cap"]
    return (f"{r['trace']:>4} K={r['kv_tokens']:<7} S={r['slots']:<4} x{r['rate']:<3g} cap {cap!s:>5} "
            f"{r['design']:>11}: running {r['mean_running']:>6} "
            f"(max {r['max_running']:>4}), KV held {r['kv_held']:.2f} used {r['kv_used']:.2f}, "
            f"{r['tokens_per_s']:>7} tok/s, TTFT p50/p99 {r['ttft_p50_ms']}/{r['ttft_p99_ms']} ms, "
            f"TPOT p50/p99 {r['tpot_p50_ms']}/{r['tpot_p99_ms']} ms, "
            f"preemptions {r['preemptions']}, recomputed {r['recomputed_tokens']} tok ({r['recompute_s']} s)")


def crossover(rows: list[dict[str, object]], trace: str, rate: float, caps: list[int]) -> str:
    """The smallest cap at which paged's throughput beats reservation's by WIN, at this trace and rate."""
    def get(design: str, cap: int) -> dict[str, object]:
        return next(r for r in rows if r["trace"] == trace and r["rate"] == rate and r["cap"] == cap
                    and r["design"] == design and r["slots"] == SLOTS and r["kv_tokens"] == full)
    full = max(int(r["kv_tokens"]) for r in rows)  # type: ignore[call-overload]
    found = []
    for metric, better in (("tokens_per_s", 1), ("ttft_p99_ms", -1)):
        for cap in caps:
            res, pag = float(get("reservation", cap)[metric]), float(get("paged", cap)[metric])  # type: ignore[arg-type]
            if (pag >= WIN * res) if better > 0 else (res >= WIN * pag):
                found.append(f"{metric} from cap {cap} ({pag:g} vs {res:g})")
                break
        else:
            found.append(f"{metric}: not within {WIN:g}x at any cap to {caps[-1]}")
    return f"{trace} x{rate:g}: paged ahead on " + "; ".join(found)


def plot(rows: list[dict[str, object]], caps: list[int], rates: list[float], out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    full = max(int(r["kv_tokens"]) for r in rows)  # type: ignore[call-overload]
    for trace in sorted({str(r["trace"]) for r in rows}):
        fig, axes = plt.subplots(1, 3, figsize=(14, 4))
        for rate in rates:
            for design, style in (("reservation", "-"), ("paged", "--")):
                pts = [r for r in rows if r["trace"] == trace and r["rate"] == rate and r["design"] == design
                       and r["slots"] == SLOTS and r["cap"] is not None and r["kv_tokens"] == full]
                pts.sort(key=lambda r: r["cap"])  # type: ignore[arg-type, return-value]
                xs = [r["cap"] for r in pts]
                label = f"{design} x{rate:g}"
                axes[0].plot(xs, [r["tokens_per_s"] for r in pts], style, marker="o", label=label)
                axes[1].plot(xs, [r["mean_running"] for r in pts], style, marker="o", label=label)
                axes[2].plot(xs, [r["ttft_p50_ms"] for r in pts], style, marker="o", label=label)
        for ax, title in zip(axes, ("output tokens/s", "requests running (mean)", "TTFT p50 (ms)"), strict=True):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("max_tokens cap")
            ax.set_title(f"{trace}: {title}")
        axes[2].set_yscale("log")
        axes[0].legend(fontsize=7)
        fig.tight_layout()
        path = out / f"designs-{trace}.png"
        out.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--caps", default="512,1024,2048,4096,8192")
    parser.add_argument("--rates", default="1,4,16")
    parser.add_argument("--slots-high", type=int, default=1024, help="a second slot count, at the highest rate and cap")
    parser.add_argument("--traces", default="conv,code")
    parser.add_argument("--small-pools", default="65536,131072",
                        help="smaller KV pools (tokens), at the highest rate, cap exact and 2048: where paged preempts")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--plots", type=Path, default=None)
    args = parser.parse_args()
    caps = [int(c) for c in args.caps.split(",")]
    rates = [float(r) for r in args.rates.split(",")]
    deployment = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8", "bf16")
    roofline = Roofline(deployment, "full")
    print(f"Llama 3.3 70B on 4 x H100 SXM, fp8 weights, bf16 KV: K = {deployment.kv_tokens:,} tokens; budget {BUDGET}")
    rows: list[dict[str, object]] = []
    started = time.perf_counter()
    for name in args.traces.split(","):
        trace = load(name)
        kv = deployment.kv_tokens
        plan = [(SLOTS, rate, cap, kv) for rate in rates for cap in [None, *caps]]
        plan += [(args.slots_high, rates[-1], cap, kv) for cap in (None, caps[-1])]
        pools = [int(k) for k in args.small_pools.split(",") if k]
        plan += [(SLOTS, rates[-1], cap, pool) for pool in pools for cap in (None, 2048)]
        for slots, rate, cap, pool in plan:
            config = Config(BUDGET, slots, pool)
            for design in SWEPT:
                r = row(name, slots, run_design(design, trace, config, roofline, cap, rate))
                r["kv_tokens"] = pool
                rows.append(r)
                print(show(r), flush=True)
    print(f"\n{len(rows)} runs in {time.perf_counter() - started:.0f} s\ncrossover (throughput, S={SLOTS}):")
    for name in args.traces.split(","):
        for rate in rates:
            print("  " + crossover(rows, name, rate, caps))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    if args.plots is not None:
        for path in plot(rows, caps, rates, args.plots):
            print(f"plot: {path}")


if __name__ == "__main__":
    main()
