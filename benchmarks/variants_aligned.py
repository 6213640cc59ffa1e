"""What block-aligned chunks cost: budget tokens left unused while a prompt waits on alignment, and
the change in time to first token, on both Azure 2023 traces, for block sizes 16..256, beside the
reference in one run. Llama 3.3 70B on 4 H100 SXM in FP8, full cost model, 256 slots, KV from memory.

    python benchmarks/variants_aligned.py [--budget 2048] [--rates 1,4] [--limit N] [--jobs 2]

Per row: the share of busy steps in which a prompt waited on alignment (a chunk rounded down, or a
partial prompt or the admissible head left without a chunk), the unused budget in those steps (mean
and max: at most b - 1 by ALIGNED-WORK-CONSERVING), the mean unused budget over all busy steps, and
TTFT p50/p99 with the change against the reference at the same rate. About 4 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from stallfree.costs import Deployment, Roofline, gpu, model
from stallfree.reference import Scheduler
from stallfree.sim.simulator import simulate
from stallfree.sim.summary import summarise
from stallfree.sim.trace import load
from stallfree.spec import Config
from stallfree.variants.aligned import Aligned

BLOCKS = (16, 32, 64, 128, 256)
TRACES = ("conv", "code")
MAX_SEQS = 256
MS = 1e3


class Probe(Aligned):
    """Aligned, counting after each plan the steps where a prompt waits on alignment and their unused budget."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int, block_size: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, block_size)
        self.waits: list[int] = []  # unused budget of each step in which a prompt waited on alignment

    def schedule(self) -> list[tuple[int, int]]:
        plan = super().schedule()
        planned = dict(plan)
        used = sum(planned.values())
        waiting = any(
            not seq.is_ready and seq.num_prefilled + planned.get(seq.rid, 0) < seq.request.prompt_len
            for seq in self.running.values()
        ) or (bool(self.waiting) and used < self.config.token_budget and self.fits(self.waiting[0])
              and self.waiting[0].request.prompt_len > self.config.token_budget - used)
        if waiting and plan:
            self.waits.append(self.config.token_budget - used)
        return plan


def run(point: tuple[str, float, int | None, int, int | None]) -> dict[str, Any]:
    trace_name, rate, block, budget, limit = point
    deployment = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8")
    roofline = Roofline(deployment, "full")
    trace = load(trace_name)
    trace = (trace.head(limit) if limit else trace).scaled(rate)
    config = Config(budget, MAX_SEQS, deployment.kv_tokens)
    probes: list[Probe] = []

    def factory(**cfg: int) -> Any:
        if block is None:
            return Scheduler(**cfg)
        probes.append(Probe(**cfg, block_size=block))
        return probes[-1]

    result = simulate(trace, factory, config, roofline, "reference" if block is None else f"aligned-{block}")
    s = summarise(result)
    steps = list(result.step_tokens)
    waits = probes[0].waits if probes else []
    return {
        "trace": trace_name, "rate": rate, "block": block, "steps": len(steps),
        "wait_share": len(waits) / len(steps) if steps else 0.0,
        "wait_unused_mean": sum(waits) / len(waits) if waits else 0.0, "wait_unused_max": max(waits, default=0),
        "unused_mean": sum(budget - n for n in steps) / len(steps) if steps else 0.0,
        "ttft_p50": s.latency["ttft"].p50 * MS, "ttft_p99": s.latency["ttft"].p99 * MS,  # type: ignore[union-attr]
        "wall": result.wall_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=2048)
    parser.add_argument("--rates", default="1,4", help="rate scales, e.g. 1,4")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    points = [(t, r, b, args.budget, args.limit) for t in TRACES for r in rates for b in (None, *BLOCKS)]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(run, points))
    print(f"budget {args.budget}, {MAX_SEQS} slots; Llama 3.3 70B, 4 x H100 SXM, fp8, full cost model")
    print(f"{'trace':<6}{'rate':>5}{'block':>7}{'steps':>9}{'wait %':>8}{'unused@wait':>12}{'max':>6}"
          f"{'unused/step':>12}{'TTFT p50':>10}{'p99':>8}{'dp50':>8}{'dp99':>8}")
    base: dict[tuple[str, float], dict[str, Any]] = {}
    for r in rows:
        if r["block"] is None:
            base[(r["trace"], r["rate"])] = r
        ref = base[(r["trace"], r["rate"])]
        d50 = (r["ttft_p50"] / ref["ttft_p50"] - 1) * 100
        d99 = (r["ttft_p99"] / ref["ttft_p99"] - 1) * 100
        block = "ref" if r["block"] is None else str(r["block"])
        print(f"{r['trace']:<6}{r['rate']:>5g}{block:>7}{r['steps']:>9,}{r['wait_share'] * 100:>7.1f}%"
              f"{r['wait_unused_mean']:>12.1f}{r['wait_unused_max']:>6}{r['unused_mean']:>12.1f}"
              f"{r['ttft_p50']:>10.1f}{r['ttft_p99']:>8.1f}{d50:>+7.1f}%{d99:>+7.1f}%")


if __name__ == "__main__":
    main()
