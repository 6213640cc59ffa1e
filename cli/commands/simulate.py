"""`stallfree simulate`: replay a request trace through a scheduler with step times from the cost
model; print TTFT, TPOT, end-to-end and queueing spreads, throughput and budget use."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stallfree.costs import MODES
from stallfree.sim.priorities import hashed_priority

from .. import exits
from .args import (
    FactoryError,
    add_output_arguments,
    check_json,
    check_output_dir,
    path_error,
    positive_float,
    positive_int,
    seconds,
    shows_progress,
    write_json,
)
from .budget import add_deployment_arguments, deployment_from
from .hosting import close, load_judged

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
                        "priced), a variant of docs/variants.md (aligned-16 .. aligned-256, resizable, rotating, "
                        "aging, aging-4, no-aging), or any MODULE:FACTORY")
    p.add_argument("--budget-at", type=budget_at, action="append", default=[], metavar="SECONDS:B",
                   help="set_budget(B) before the first step at or after SECONDS (a budget-change variant); repeatable")
    p.add_argument("--priority-mix", type=priority_mix, default=None, metavar="P0,P1,P2,P3",
                   help="give each request a priority from its rid, in these percentages (a priority variant)")
    p.add_argument("--rate-scale", type=rate_scale, default=1.0, metavar="X",
                   help="arrivals X times as fast as the trace (default 1)")
    p.add_argument("--limit", type=positive_int, default=None, metavar="N", help="only the first N requests")
    p.add_argument("--max-new-cap", type=caps, default=None, metavar="N[,N...]",
                   help="each request reserves max_new = N (or one of the Ns, drawn per request) and stops at "
                        "its real output length from the trace (default: max_new is the real length, the oracle)")
    p.add_argument("--check", action="store_true", help="run the monitor: stop at the first broken rule")
    p.add_argument("--plot", type=Path, default=None, metavar="DIR", help="write PNG plots of the run into DIR")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="a call of a scheduler outside stallfree (MODULE:FACTORY) taking longer ends the run: "
                        f"exit 3, naming the call (default {DEFAULT_TIMEOUT:g})")
    add_output_arguments(p, "the summary")


DEFAULT_TIMEOUT = 60.0  # seconds one call of a hosted scheduler may take (trace's default too)
MAX_RATE_SCALE = 1e6  # arrivals a million times as fast: all at once, for any trace


def rate_scale(text: str) -> float:
    return positive_float(text, MAX_RATE_SCALE)


def caps(text: str) -> tuple[int, ...]:
    """--max-new-cap: one int >= 1, or a comma-separated list of them."""
    try:
        return tuple(positive_int(part) for part in text.split(","))
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"expected N or N,N,... (ints >= 1), got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from stallfree.costs import Roofline
    from stallfree.sim.trace import TraceError, load
    from stallfree.spec import Config, InvalidField, registry

    try:
        deployment = deployment_from(args)
        roofline = Roofline(deployment, args.mode)
        kv = args.kv if args.kv is not None else deployment.kv_tokens
        config = Config(args.budget, args.max_seqs, kv)
        trace = load(args.trace)
        if args.limit is not None:
            trace = trace.head(args.limit)
        trace = trace.scaled(args.rate_scale)
        policy = registry.policies().get(args.scheduler)
        make, design = load_judged(args.scheduler if policy is None else policy[0], args.scheduler, args.timeout)
        contract = policy[1] if policy is not None else registry.contract(design)
        check_json(args)
        if args.plot is not None:
            check_output_dir("--plot", args.plot)
            needs_matplotlib()
    except (TraceError, InvalidField, OSError, ValueError, ImportError, AttributeError) as error:
        flag = "--trace: " if isinstance(error, TraceError) else ""
        print(f"stallfree simulate: {flag}{error}", file=sys.stderr)
        return exits.USAGE
    try:
        if contract.is_design and contract.held is not None and contract is not registry.RESERVATION:
            return simulate_design(args, contract, trace, config, roofline, None if policy is not None else make)
        return simulated(args, trace, config, roofline, make, contract)
    finally:
        close(make)


def simulated(args: argparse.Namespace, trace: Any, config: Any, roofline: Any, make: Callable[..., Any],
              contract: Any) -> int:
    """The run of a loaded scheduler over the trace under `contract`, each way it can end as its exit status."""
    from stallfree.conformance.isolation.remote import CallHung
    from stallfree.sim.simulator import Stalled, Variant, simulate
    from stallfree.spec import RuleViolation, Unsupported

    shown = shows_progress(args)
    try:
        check_variant_arguments(args, make, config)
        variant = Variant(tuple(sorted(args.budget_at)), args.priority_mix, None if contract.is_design else contract)
        cap, distribution = (None, ()) if args.max_new_cap is None else (
            (args.max_new_cap[0], ()) if len(args.max_new_cap) == 1 else (None, args.max_new_cap))
        result = simulate(trace, make, config, roofline, args.scheduler, check=args.check, progress=shown,
                          variant=variant, max_new_cap=cap, max_new_caps=distribution)
    except RuleViolation as violation:
        print(f"{NEWLINE[not shown]}stallfree simulate: {args.scheduler} broke {violation}", file=sys.stderr)
        return exits.BROKEN
    except (FactoryError, Unsupported) as error:
        print(f"stallfree simulate: {error}", file=sys.stderr)
        return exits.USAGE
    except CallHung as error:  # a hosted scheduler did not answer: stopped from outside
        print(f"{NEWLINE[not shown]}stallfree simulate: {args.scheduler} did not answer: {error}", file=sys.stderr)
        return exits.CRASHED
    except Stalled as error:  # no rule judged it (no --check), but the scheduler stopped making progress
        print(f"{NEWLINE[not shown]}stallfree simulate: {args.scheduler} failed: {error}", file=sys.stderr)
        return exits.BROKEN
    except Exception as error:  # the scheduler raised (or answered what the simulator cannot follow)
        print(f"{NEWLINE[not shown]}stallfree simulate: {args.scheduler} crashed: {type(error).__name__}: "
              f"{str(error)[:300]}", file=sys.stderr)
        return exits.CRASHED
    return print_result(args, result)


def design_lines(stats: Any) -> list[str]:
    return [
        f"memory ({stats.design}): {stats.mean_running:.1f} requests running on average (max {stats.max_running}); "
        f"KV held {stats.kv_held:.1%} of K, holding computed tokens {stats.kv_used:.1%} (time-weighted over busy time)",
        f"preemptions: {stats.preemptions}; recomputed {stats.recomputed_tokens:,} tokens, "
        f"{stats.recompute_seconds:.2f} s of step time (each step's seconds shared among its tokens)",
    ]


def simulate_design(args: argparse.Namespace, design: Any, trace: Any, config: Any, roofline: Any,
                    make: Callable[..., Any] | None = None) -> int:
    """`--scheduler paged` (a design other than the reservation's): its preemptions priced
    (sim/designs.py), reported as `simulate` reports, plus what the memory design did; one
    --max-new-cap N caps every output at N. `make`: a user's scheduler of that design (hosted), run in
    place of the design's own; None for a policy of stallfree's."""
    from stallfree.conformance.isolation.remote import CallHung
    from stallfree.sim.designs import run_design
    from stallfree.sim.summary import report
    from stallfree.spec import Unsupported

    name = design.name
    if args.check or args.plot is not None:
        print(f"stallfree simulate: --check and --plot are not available with --scheduler {args.scheduler}; "
              f"check it with `stallfree conform --profile {name}`", file=sys.stderr)
        return exits.USAGE
    if args.max_new_cap is not None and len(args.max_new_cap) > 1:
        print(f"stallfree simulate: --max-new-cap {','.join(map(str, args.max_new_cap))}: the {name} design takes "
              "one cap N, not a distribution", file=sys.stderr)
        return exits.USAGE
    cap = None if args.max_new_cap is None else args.max_new_cap[0]
    try:
        run = run_design(design, trace, config, roofline, cap, factory=make,
                         policy=None if make is None else args.scheduler)
    except (FactoryError, Unsupported) as error:
        print(f"stallfree simulate: {error}", file=sys.stderr)
        return exits.USAGE
    except CallHung as error:  # a hosted scheduler did not answer: stopped from outside
        print(f"stallfree simulate: {args.scheduler} did not answer: {error}", file=sys.stderr)
        return exits.CRASHED
    except Exception as error:  # the scheduler raised (or answered what the simulator cannot follow)
        print(f"stallfree simulate: {args.scheduler} crashed: {type(error).__name__}: {str(error)[:300]}",
              file=sys.stderr)
        return exits.CRASHED
    for line in [*report(run.summary), *design_lines(run.stats)]:
        print(line)
    print(f"rules: not checked (check the {name} design with stallfree conform --profile {name})")
    try:
        write_json(args, {**run.summary.to_json(), "design": run.stats.to_json()})
    except ValueError as error:
        print(f"stallfree simulate: {error}", file=sys.stderr)
        return exits.USAGE
    return exits.HOLDS


def print_result(args: argparse.Namespace, result: Any) -> int:
    """Prints the summary of a finished run and what the monitor judged, writes its JSON and plots."""
    from stallfree.sim.summary import report, summarise

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


def check_variant_arguments(args: argparse.Namespace, make: Callable[..., Any], config: Any) -> None:
    """--budget-at needs a scheduler with set_budget(), --priority-mix one whose add() takes a priority:
    asked of a throwaway instance before the run, so that a wrong pairing is a bad argument."""
    if not args.budget_at and args.priority_mix is None:
        return
    probe = make(token_budget=config.token_budget, max_seqs=config.max_seqs, kv_tokens=config.kv_tokens)
    if args.budget_at and not callable(getattr(probe, "set_budget", None)):
        raise FactoryError(f"--budget-at: --scheduler {args.scheduler!r} has no set_budget() (try resizable, rotating)")
    if args.priority_mix is not None:
        try:
            probe.add(0, 1, 1, 0)
        except TypeError as error:
            message = f"--priority-mix: --scheduler {args.scheduler!r}'s add() takes no priority: {error}"
            raise FactoryError(message) from None


def budget_at(text: str) -> tuple[float, int]:
    """SECONDS:B, e.g. 600:64."""
    at, sep, budget = text.partition(":")
    try:
        if not sep:
            raise ValueError("expected SECONDS:BUDGET")
        seconds, value = float(at), int(budget)
        if not seconds >= 0 or value < 1:
            raise ValueError("SECONDS must be >= 0 and BUDGET >= 1")
        return seconds, value
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--budget-at {text!r}: {error}") from None


def priority_mix(text: str) -> Callable[[int], int]:
    """P0,P1,...: percentages of requests at priority 0, 1, ...; each rid's priority is a fixed hash."""
    try:
        shares = [int(p) for p in text.split(",")]
        if not shares or any(s < 0 for s in shares) or sum(shares) != 100 or len(shares) > 4:
            raise ValueError("expected up to 4 percentages >= 0 that sum to 100")
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--priority-mix {text!r}: {error}") from None
    return hashed_priority(shares)


def needs_matplotlib() -> None:
    """--plot draws with matplotlib: a missing extra is a bad argument, found before the run."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("--plot needs matplotlib: pip install 'stallfree[plot]'") from None
