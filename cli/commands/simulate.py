"""`stallfree simulate`: replay a request trace through a scheduler with step times from the cost
model; print TTFT, TPOT, end-to-end and queueing spreads, throughput and budget use."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from stallfree.costs import MODES

from .args import (
    FactoryError,
    check_output_dir,
    check_output_file,
    guarded,
    load_scheduler,
    path_error,
    positive_float,
    positive_int,
    write_output,
)
from .budget import add_deployment_arguments, deployment_from

NAME = "simulate"
HELP = "replay a trace (conv, code or a CSV) through a scheduler on a cost model; report latency percentiles"

DEFAULT_BUDGET = 2048
DEFAULT_MAX_SEQS = 256
NEWLINE = {False: "\n", True: ""}  # ends the progress line, when there is one, before an error


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", default="conv", metavar="conv|code|FILE",
                   help="a shipped Azure 2023 trace (conv: 19,366 requests, code: 8,819) or a CSV file")
    add_deployment_arguments(p)
    p.add_argument("--mode", default="full", choices=MODES,
                   help="cost mode (default full: attention and KV traffic priced)")
    p.add_argument("--budget", type=positive_int, default=DEFAULT_BUDGET,
                   help=f"token budget B (default {DEFAULT_BUDGET})")
    p.add_argument("--max-seqs", type=positive_int, default=DEFAULT_MAX_SEQS,
                   help=f"slots S (default {DEFAULT_MAX_SEQS})")
    p.add_argument("--kv", type=positive_int, default=None,
                   help="KV capacity K in tokens (default: what the GPUs' memory holds beside the weights)")
    p.add_argument("--scheduler", default="reference", metavar="NAME|MODULE:FACTORY",
                   help="reference (default), prefill-first, unchunked, paged (the paged design, preemption "
                        "priced), or any plain-protocol MODULE:FACTORY")
    p.add_argument("--rate-scale", type=positive_float, default=1.0, metavar="X",
                   help="arrivals X times as fast as the trace (default 1)")
    p.add_argument("--limit", type=positive_int, default=None, metavar="N", help="only the first N requests")
    p.add_argument("--check", action="store_true", help="run the monitor: stop at the first broken rule")
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the summary as JSON")
    p.add_argument("--plot", type=Path, default=None, metavar="DIR", help="write PNG plots of the run into DIR")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from stallfree.costs import Roofline
    from stallfree.sim.policies import POLICIES
    from stallfree.sim.simulator import Stalled, simulate
    from stallfree.sim.summary import report, summarise
    from stallfree.sim.trace import TraceError, load
    from stallfree.spec import Config, InvalidField, RuleViolation

    try:
        deployment = deployment_from(args)
        roofline = Roofline(deployment, args.mode)
        kv = args.kv if args.kv is not None else deployment.kv_tokens
        config = Config(args.budget, args.max_seqs, kv)
        trace = load(args.trace)
        if args.limit is not None:
            trace = trace.head(args.limit)
        trace = trace.scaled(args.rate_scale)
        make = guarded(load_scheduler(POLICIES.get(args.scheduler, args.scheduler)), args.scheduler)
        if args.json is not None:
            check_output_file("--json", args.json)
        if args.plot is not None:
            check_output_dir("--plot", args.plot)
            needs_matplotlib()
    except (TraceError, InvalidField, OSError, ValueError, ImportError, AttributeError) as error:
        print(f"stallfree simulate: {error}", file=sys.stderr)
        return 2
    if args.scheduler == "paged":
        from .paged_simulate import simulate_paged

        return simulate_paged(args, trace, config, roofline)
    try:
        result = simulate(trace, make, config, roofline, args.scheduler, check=args.check, progress=not args.quiet)
    except RuleViolation as violation:
        print(f"{NEWLINE[args.quiet]}stallfree simulate: {args.scheduler} broke {violation}", file=sys.stderr)
        return 1
    except FactoryError as error:
        print(f"stallfree simulate: {error}", file=sys.stderr)
        return 2
    except (Stalled, KeyError) as error:
        print(f"{NEWLINE[args.quiet]}stallfree simulate: {args.scheduler} failed: {error}", file=sys.stderr)
        return 1
    summary = summarise(result)
    for line in report(summary):
        print(line)
    if args.check:
        print("rules: all held on every step (monitor)")
    try:
        if args.json is not None:
            write_output("--json", args.json, json.dumps(summary.to_json(), indent=1))
    except ValueError as error:  # checked before the run, yet the write failed
        print(f"stallfree simulate: {error}", file=sys.stderr)
        return 2
    if args.plot is not None:
        from stallfree.sim.plots import plot_run

        try:
            paths = plot_run(result, args.plot)
        except OSError as error:  # checked before the run, yet a write failed
            print(f"stallfree simulate: {path_error('--plot', args.plot, error)}", file=sys.stderr)
            return 2
        for path in paths:
            print(f"plot: {path}")
    return 0


def needs_matplotlib() -> None:
    """--plot draws with matplotlib: a missing extra is a bad argument, found before the run."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("--plot needs matplotlib: pip install 'stallfree[plot]'") from None
