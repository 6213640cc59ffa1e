"""`stallfree conform MODULE:FACTORY`: check a scheduler against the rules it claims; print each broken
rule with a minimal counterexample (JSON workload and pytest test)."""

from __future__ import annotations

import argparse
import sys

from .. import exits
from .args import (
    add_output_arguments,
    bounded_int,
    check_json,
    positive_int,
    rule_list,
    seconds,
    seed,
    shows_progress,
    write_json,
)

NAME = "conform"
HELP = "check a scheduler (MODULE:FACTORY) against the rules; shrink what breaks to a minimal workload"

GRID = "grid"
MAX_EXAMPLES = 100_000  # per config: more is a run of days, not a check


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="MODULE:FACTORY",
                   help="the scheduler: FACTORY(token_budget=, max_seqs=, kv_tokens=) speaking the plain protocol")
    p.add_argument("--budget", type=positive_int, help="hold the token budget B at this value")
    p.add_argument("--max-seqs", type=positive_int, help="hold the slots S at this value")
    p.add_argument("--kv", type=positive_int, help="hold the KV capacity K (tokens) at this value")
    p.add_argument("--configs", choices=[GRID], default=GRID,
                   help="explore the grid of configs with its edges (the default); the fields given above are held")
    p.add_argument("--examples", type=bounded_int(MAX_EXAMPLES), default=None, metavar="N",
                   help="generated workloads per config (default 25)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the workload generator (default 0)")
    claim = p.add_mutually_exclusive_group()
    claim.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID", help="check only these rules")
    claim.add_argument("--profile", default=None,
                       help="check a profile: safety, full (the default), paged (the paged design's rules), or a "
                            "variant's contract: aligned, budget-change, rotation, aging, priority, static "
                            "(docs/variants.md)")
    p.add_argument("--timeout", type=seconds, default=None, metavar="SECONDS",
                   help="per-call timeout for the scheduler (default 2)")
    p.add_argument("--load-timeout", type=seconds, default=None, metavar="SECONDS",
                   help="seconds the scheduler's import may take (default: $STALLFREE_LOAD_TIMEOUT, else 300)")
    p.add_argument("--run-timeout", type=seconds, default=None, metavar="SECONDS",
                   help="seconds one workload may take before the kit stops it from outside (default: "
                        "$STALLFREE_RUN_TIMEOUT, else 30 + 20 per-call timeouts)")
    add_output_arguments(p, "the report")


def run(args: argparse.Namespace) -> int:
    try:
        from stallfree.conformance.kit import DEFAULT_EXAMPLES, conform
    except ImportError as error:  # hypothesis generates the workloads: the conform extra
        return fail(f"needs hypothesis ({error}): pip install 'stallfree[conform]'")
    from stallfree.conformance.isolation.outcome import CRASH, KIT_ERROR, TIMEOUT
    from stallfree.conformance.isolation.sandbox import DEFAULT_TIMEOUT
    from stallfree.conformance.kit.profiles import is_profile, profiles
    from stallfree.conformance.kit.report import render
    from stallfree.spec.utils.loader import TargetError

    if args.profile is not None and not is_profile(args.profile):
        names = ", ".join(profiles())
        return fail(f"--profile {args.profile!r} is unknown; the profiles are {names}")
    try:
        check_json(args)
    except ValueError as error:
        return fail(str(error))

    show = shows_progress(args)

    def progress(line: str) -> None:
        if show:
            print(f"conform: {line}", file=sys.stderr, flush=True)

    try:
        report = conform(
            args.target, rules=args.rules, profile=args.profile, budget=args.budget, max_seqs=args.max_seqs,
            kv_tokens=args.kv, examples=args.examples or DEFAULT_EXAMPLES, seed=args.seed,
            timeout=args.timeout or DEFAULT_TIMEOUT, run_timeout=args.run_timeout, load_timeout=args.load_timeout,
            progress=progress,
        )
    except (TargetError, ValueError) as error:
        return fail(str(error))
    print(render(report))
    try:
        write_json(args, report.to_json())
    except ValueError as error:  # checked before the run, yet the write failed
        return fail(str(error))
    if report.ok and report.refused and len(report.refused) == len(report.shapes):
        # The factory raised at every config: no scheduler to judge, as with trace's --scheduler.
        print(f"stallfree conform: {args.target}: the factory refused every config "
              f"({next(iter(report.refused.values()))}): nothing was judged", file=sys.stderr)
        return exits.USAGE
    if report.ok:
        return exits.HOLDS
    if set(report.counterexamples) <= {CRASH, TIMEOUT, KIT_ERROR}:
        return exits.CRASHED  # the target crashed or hung (or the kit failed): no rule was found broken
    return exits.BROKEN


def fail(message: str) -> int:
    print(f"stallfree conform: {message}", file=sys.stderr)
    return exits.USAGE
