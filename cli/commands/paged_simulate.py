"""`stallfree simulate --scheduler paged`: the paged design on the trace, its preemptions priced
(sim/designs.py), reported as `simulate` reports, plus what the memory design did."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from stallfree import exits

from .args import write_json


def design_lines(stats: Any) -> list[str]:
    return [
        f"memory ({stats.design}): {stats.mean_running:.1f} requests running on average (max {stats.max_running}); "
        f"KV held {stats.kv_held:.1%} of K, holding computed tokens {stats.kv_used:.1%} (time-weighted over busy time)",
        f"preemptions: {stats.preemptions}; recomputed {stats.recomputed_tokens:,} tokens, "
        f"{stats.recompute_seconds:.2f} s of step time (each step's seconds shared among its tokens)",
    ]


def simulate_paged(args: argparse.Namespace, trace: Any, config: Any, roofline: Any) -> int:
    from stallfree.sim.designs import run_design
    from stallfree.sim.summary import report

    if args.check or args.plot is not None:
        print("stallfree simulate: --check and --plot are not available with --scheduler paged; "
              "check it with `stallfree conform --profile paged`", file=sys.stderr)
        return exits.USAGE
    run = run_design("paged", trace, config, roofline)
    for line in report(run.summary):
        print(line)
    for line in design_lines(run.stats):
        print(line)
    print("rules: not checked (check the paged design with stallfree conform --profile paged)")
    try:
        write_json(args, {**run.summary.to_json(), "design": run.stats.to_json()})
    except ValueError as error:
        print(f"stallfree simulate: {error}", file=sys.stderr)
        return exits.USAGE
    return exits.HOLDS
