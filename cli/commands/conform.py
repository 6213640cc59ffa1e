"""`stallfree conform MODULE:FACTORY`: check a scheduler against the rules it claims; print each broken
rule with a minimal counterexample (JSON workload and pytest test)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .args import check_output_file, positive_float, positive_int, rule_list, seed, write_output

NAME = "conform"
HELP = "check a scheduler (MODULE:FACTORY) against the rules; shrink what breaks to a minimal workload"

GRID = "grid"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="MODULE:FACTORY",
                   help="the scheduler: FACTORY(token_budget=, max_seqs=, kv_tokens=) speaking the plain protocol")
    p.add_argument("--budget", type=positive_int, help="hold the token budget B at this value")
    p.add_argument("--max-seqs", type=positive_int, help="hold the slots S at this value")
    p.add_argument("--kv", type=positive_int, help="hold the KV capacity K (tokens) at this value")
    p.add_argument("--configs", choices=[GRID], default=GRID,
                   help="explore the grid of configs with its edges (the default); the fields given above are held")
    p.add_argument("--examples", type=positive_int, default=None, metavar="N",
                   help="generated workloads per config (default 25)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the workload generator (default 0)")
    claim = p.add_mutually_exclusive_group()
    claim.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID", help="check only these rules")
    claim.add_argument("--profile", default=None,
                       help="check a profile: safety, full (the default), or paged (the paged design's rules)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the report as JSON to FILE")
    p.add_argument("--timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="per-call timeout for the scheduler (default 2)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run(args: argparse.Namespace) -> int:
    from stallfree.conformance.isolation.sandbox import DEFAULT_TIMEOUT
    from stallfree.conformance.kit import DEFAULT_EXAMPLES, conform
    from stallfree.conformance.kit.profiles import PROFILES
    from stallfree.conformance.kit.report import render
    from stallfree.spec.loader import TargetError

    if args.profile is not None and args.profile not in PROFILES:
        return fail(f"--profile {args.profile!r} is unknown; the profiles are {', '.join(PROFILES)}")
    if args.json is not None:
        try:
            check_output_file("--json", args.json)
        except ValueError as error:
            return fail(str(error))

    def progress(line: str) -> None:
        if not args.quiet:
            print(f"conform: {line}", file=sys.stderr, flush=True)

    try:
        report = conform(
            args.target, rules=args.rules, profile=args.profile, budget=args.budget, max_seqs=args.max_seqs,
            kv_tokens=args.kv, examples=args.examples or DEFAULT_EXAMPLES, seed=args.seed,
            timeout=args.timeout or DEFAULT_TIMEOUT, progress=progress,
        )
    except TargetError as error:
        return fail(str(error))
    print(render(report))
    if args.json is not None:
        try:
            write_output("--json", args.json, json.dumps(report.to_json(), indent=2) + "\n")
        except ValueError as error:  # checked before the run, yet the write failed
            return fail(str(error))
    return 0 if report.ok else 1


def fail(message: str) -> int:
    print(f"stallfree conform: {message}", file=sys.stderr)
    return 2
