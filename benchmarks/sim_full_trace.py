"""Simulator speed: the whole conversation trace (19,366 requests) under the reference, full cost
model, Llama 3.3 70B on 4 H100 SXM in FP8, budget 2,048. Target: 30 s or less on this machine.

Prints wall seconds per run (median over --repeat), steps and steps per second.

    python benchmarks/sim_full_trace.py [--trace conv] [--repeat 3] [--policy reference]
"""

from __future__ import annotations

import argparse
import statistics

from stallfree.costs import Deployment, Roofline, gpu, model
from stallfree.sim.policies import factory
from stallfree.sim.simulator import simulate
from stallfree.sim.trace import load
from stallfree.spec import Config

BUDGET = 2048
MAX_SEQS = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default="conv")
    parser.add_argument("--policy", default="reference")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    deployment = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8")
    roofline = Roofline(deployment, "full")
    trace = load(args.trace)
    config = Config(BUDGET, MAX_SEQS, deployment.kv_tokens)
    walls = []
    for _ in range(args.repeat):
        result = simulate(trace, factory(args.policy), config, roofline, args.policy, progress=True)
        walls.append(result.wall_seconds)
        steps = len(result.step_tokens)
        print(f"{args.trace} ({len(trace.requests):,} requests) under {args.policy}: {result.wall_seconds:.1f} s wall, "
              f"{steps:,} steps ({steps / result.wall_seconds:,.0f} steps/s), "
              f"{sum(s.num_emitted for s in result.streams):,} tokens, {result.clock:,.0f} s simulated")
    print(f"median of {len(walls)}: {statistics.median(walls):.1f} s (target <= 30 s)")


if __name__ == "__main__":
    main()
