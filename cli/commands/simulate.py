"""`stallfree simulate`: replay a request trace through a scheduler with step times from the cost
model; print TTFT, TPOT, end-to-end and queueing spreads, throughput and budget use."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stallfree.costs import MODES

from .. import exits
from .args import (
    FactoryError,
    add_output_arguments,
    check_json,
    check_output_dir,
    guarded,
    load_scheduler,
    path_error,
    positive_float,
    positive_int,
    shows_progress,
    write_json,
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
    p.add_argument("--rate-scale", type=rate_scale, default=1.0, metavar="X",
                   help="arrivals X times as fast as the trace (default 1)")
    p.add_argument("--limit", type=positive_int, default=None, metavar="N", help="only the first N requests")
    p.add_argument("--check", action="store_true", help="run the monitor: stop at the first broken rule")
    p.add_argument("--plot", type=Path, default=None, metavar="DIR", help="write PNG plots of the run into DIR")
    add_output_arguments(p, "the summary")


MAX_RATE_SCALE = 1e6  # arrivals a million times as fast: all at once, for any trace


def rate_scale(text: str) -> float:
    return positive_float(text, MAX_RATE_SCALE)


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
        check_json(args)
        if args.plot is not None:
            check_output_dir("--plot", args.plot)
            needs_matplotlib()
    except (TraceError, InvalidField, OSError, ValueError, ImportError, AttributeError) as error:
        flag = "--trace: " if isinstance(error, TraceError) else ""
        print(f"stallfree simulate: {flag}{error}", file=sys.stderr)
        return exits.USAGE
    if args.scheduler == "paged":
        from .paged_simulate import simulate_paged

        return simulate_paged(args, trace, config, roofline)
    shown = shows_progress(args)
    try:
        result = simulate(trace, make, config, roofline, args.scheduler, check=args.check, progress=shown)
    except RuleViolation as violation:
        print(f"{NEWLINE[not shown]}stallfree simulate: {args.scheduler} broke {violation}", file=sys.stderr)
        return exits.BROKEN
    except FactoryError as error:
        print(f"stallfree simulate: {error}", file=sys.stderr)
        return exits.USAGE
    except Stalled as error:  # no rule judged it (no --check), but the scheduler stopped making progress
        print(f"{NEWLINE[not shown]}stallfree simulate: {args.scheduler} failed: {error}", file=sys.stderr)
        return exits.BROKEN
    except Exception as error:  # the scheduler raised (or answered what the simulator cannot follow)
        print(f"{NEWLINE[not shown]}stallfree simulate: {args.scheduler} crashed: {type(error).__name__}: "
              f"{str(error)[:300]}", file=sys.stderr)
        return exits.CRASHED
    summary = summarise(result)
    for line in report(summary):
        print(line)
    if args.check:
        print("rules: all held on every step (monitor)")
    else:
        print("rules: not checked (give --check to run the monitor)")
    try:
        write_json(args, summary.to_json())
    except ValueError as error:  # checked before the run, yet the write failed
        print(f"stallfree simulate: {error}", file=sys.stderr)
        return exits.USAGE
    if args.plot is not None:
        from stallfree.sim.plots import plot_run

        try:
            paths = plot_run(result, args.plot)
        except OSError as error:  # checked before the run, yet a write failed
            print(f"stallfree simulate: {path_error('--plot', args.plot, error)}", file=sys.stderr)
            return exits.USAGE
        for path in paths:
            print(f"plot: {path}")
    return exits.HOLDS


def needs_matplotlib() -> None:
    """--plot draws with matplotlib: a missing extra is a bad argument, found before the run."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("--plot needs matplotlib: pip install 'stallfree[plot]'") from None
