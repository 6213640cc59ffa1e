"""Reservation vs paged vs paged with prefix caching, on workloads that share prefixes (shared system
prompts; multi-turn conversations) and on the Azure 2023 traces (no content: the prefix design's hits
there are a preempted request's own blocks, still cached when it is recomputed), through the
simulator's roofline (Llama 3.3 70B on 4 x H100 SXM, FP8 weights, BF16 KV; budget 2,048; 256 slots).

    python benchmarks/prefix_designs.py                 # every workload, about 10 minutes on one core
    python benchmarks/prefix_designs.py --quick         # fewer requests, for a look

Per run: hit rate (prefill positions from the cache over all prefill positions needed), output
tokens/s, TTFT and TPOT p50 / p99, recomputed tokens, preemptions. The figures are comparisons on one
cost model, not GPU measurements.
"""

from __future__ import annotations

import argparse
import time

from stallfree.costs import Deployment, Roofline
from stallfree.costs.presets import gpu, model
from stallfree.sim.designs import DESIGNS, run_design
from stallfree.sim.prefix_workloads import Conversations, SystemPrompts, conversations, system_prompts
from stallfree.sim.trace import Trace, load
from stallfree.spec import Config

BUDGET, SLOTS = 2048, 256


def first(trace: Trace, n: int | None) -> Trace:
    return trace if n is None else Trace(trace.name, trace.requests[:n])


def row(label: str, design: str, trace: Trace, config: Config, roofline: Roofline, rate: float,
        contents: dict | None) -> str:
    run = run_design(design, trace, config, roofline, None, rate, contents)  # read by a design that caches prefixes
    s, st = run.summary, run.stats
    ttft, tpot = s.latency["ttft"], s.latency["tpot"]
    tok_s = s.output_tokens / s.clock if s.clock else 0.0
    return (f"{label:<34} {design:<12} {st.hit_rate:>6.1%} {tok_s:>9,.0f} {ttft.p50:>8.2f} {ttft.p99:>8.2f} "
            f"{tpot.p50 * 1e3:>8.1f} {tpot.p99 * 1e3:>8.1f} {st.recomputed_tokens:>11,} {st.preemptions:>7,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a fifth of the requests")
    parser.add_argument("--rate", type=float, default=40.0,
                        help="system-prompt requests a second; conversations start at a fifth of it")
    parser.add_argument("--small-pool", type=int, default=65536, help="the pool (tokens) on which paged preempts")
    args = parser.parse_args()
    deployment = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8", "bf16")
    roofline = Roofline(deployment, "full")
    full = deployment.kv_tokens
    scale = 5 if args.quick else 1
    sp = system_prompts(SystemPrompts(num_requests=2000 // scale, rate=args.rate))
    cv = conversations(Conversations(num_conversations=300 // scale, rate=args.rate / 5))
    conv = load("conv")
    runs = [
        (f"system prompts (8 x 1,024) at {args.rate:g}/s, K={full:,}", sp[0], full, 1.0, sp[1]),
        (f"system prompts, K={args.small_pool:,}", sp[0], args.small_pool, 1.0, sp[1]),
        (f"conversations (5 turns), K={full:,}", cv[0], full, 1.0, cv[1]),
        (f"conversations, K={args.small_pool:,}", cv[0], args.small_pool, 1.0, cv[1]),
        (f"Azure conv 16x, first {4000 // scale:,}, K={args.small_pool:,}", first(conv, 4000 // scale),
         args.small_pool, 16.0, None),
    ]
    print(f"Llama 3.3 70B on 4 x H100 SXM (fp8 weights, bf16 KV), budget {BUDGET}, {SLOTS} slots\n")
    print(f"{'workload':<34} {'design':<12} {'hits':>6} {'tok/s':>9} {'TTFT p50':>8} {'p99 (s)':>8} "
          f"{'TPOT p50':>8} {'p99 (ms)':>8} {'recomputed':>11} {'preempt':>7}")
    began = time.perf_counter()
    for label, trace, pool, rate, contents in runs:
        for design in DESIGNS:
            print(row(label, design, trace, Config(BUDGET, SLOTS, pool), roofline, rate, contents), flush=True)
    print(f"\n{len(runs) * len(DESIGNS)} runs in {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
