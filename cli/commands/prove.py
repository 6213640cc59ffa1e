"""`stallfree prove`: the model checker, the Z3 theorems, the differential check and CrossHair, as one
table (claim, method, bound, result, seconds). Exit 0 only if every claim holds; 1 if one is broken
or undecided; 2 on bad arguments. `--fault RULE` runs the same checks on that rule's negative
controls, which must fail."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .args import check_output_file, load_scheduler, write_output

NAME = "prove"
HELP = "prove the rules: model check the reference, Z3 theorems, CrossHair contracts; print the table"

METHODS = ("model", "z3", "differential", "crosshair")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bound", default=None, metavar="B,S,K,R,P,M",
                   help="model-check bound: budget, slots, KV, adds, max prompt, max max_new (default 3,2,8,4,3,2)")
    p.add_argument("--requests", type=int, default=None, metavar="N",
                   help="symbolic requests in each Z3 step theorem (default 12)")
    p.add_argument("--crosshair-seconds", type=float, default=None, metavar="S",
                   help="CPU seconds CrossHair spends on each contract (default 4; 15 with --fault)")
    p.add_argument("--methods", default=",".join(METHODS), metavar="M,M",
                   help=f"which checks to run, of {','.join(METHODS)} (default all)")
    p.add_argument("--fault", default=None, metavar="RULE",
                   help="run the negative controls of RULE instead: its faulty scheduler, its wrong Z3 policy, "
                        "its planted CrossHair bug; every check must then fail")
    p.add_argument("--scheduler", default=None, metavar="MODULE:FACTORY",
                   help="model-check this scheduler instead; `paged` (or any factory of the paged design) runs the "
                        "paged model check, and --fault then names a paged rule")
    p.add_argument("--max-states", type=int, default=None, metavar="N", help="stop the model check past N states")
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the rows as JSON")


def _options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from stallfree.proofs import controls
    from stallfree.proofs.contracts import run as crosshair_run
    from stallfree.proofs.explicit.bounds import Bounds
    from stallfree.proofs.suite import Options

    options = Options()
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"--methods {args.methods!r}: expected some of {','.join(METHODS)}")
    options.methods = methods
    if args.fault is not None:
        rule = args.fault.upper()
        try:
            options.factory = controls.fault(rule)
            options.policy = controls.mutant(rule)
        except ValueError as error:
            raise ValueError(f"--fault {args.fault!r}: {error}") from None
        options.hidden = controls.hidden_for(rule)
        options.bound = controls.control_bound(rule)
        options.fault_rule = rule
        options.crosshair_seconds = crosshair_run.PLANTED_S
    if args.bound is not None:
        try:
            options.bound = Bounds.parse(args.bound)
        except (ValueError, TypeError) as error:  # the field named by Bounds, the flag and value here
            raise ValueError(f"--bound {args.bound!r}: {str(error).removeprefix(f'bound {args.bound!r}: ')}") from None
    if args.scheduler is not None:
        options.factory = load_scheduler(args.scheduler)
    if args.requests is not None:
        if args.requests < 1:
            raise ValueError(f"--requests must be >= 1, got {args.requests}")
        options.num_requests = args.requests
    if args.crosshair_seconds is not None:
        if args.crosshair_seconds <= 0:
            raise ValueError(f"--crosshair-seconds must be > 0, got {args.crosshair_seconds}")
        options.crosshair_seconds = args.crosshair_seconds
    if args.max_states is not None:
        if args.max_states < 1:
            raise ValueError(f"--max-states must be >= 1, got {args.max_states}")
        options.max_states = args.max_states
    if args.json is not None:
        check_output_file("--json", args.json)
    return options


def paged_rows(args: argparse.Namespace, say):  # type: ignore[no-untyped-def]
    """The rows of a paged scheduler (`--scheduler paged`, or any factory declaring design "paged")."""
    from stallfree.paged import Scheduler, small_blocks
    from stallfree.proofs import paged_suite
    from stallfree.proofs.explicit.bounds import Bounds

    factory = load_scheduler(args.scheduler)
    bound = Bounds.parse(args.bound or paged_suite.DEFAULT_BOUND)
    if args.fault is not None:
        rule = args.fault.upper()
        factory = paged_suite.fault(rule)
        bound = Bounds.parse(args.bound) if args.bound else paged_suite.control_bound(rule)
    elif factory is Scheduler:  # 16-token blocks refuse every request of a small bound
        say("the model check runs stallfree.paged with 2-token blocks (small_blocks): 16-token blocks "
            "refuse every request of a small bound")
        factory = small_blocks
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    rows = paged_suite.model_rows(bound, factory, args.max_states) if "model" in methods else []
    fault_rule = args.fault.upper() if args.fault else None
    if "z3" in methods:
        rows += paged_suite.z3_rows(fault_rule)
    if "crosshair" in methods:
        rows += paged_suite.crosshair_rows(fault_rule, args.crosshair_seconds or paged_suite.CROSSHAIR_S)
    return rows + paged_suite.not_applicable(methods)


def is_paged(args: argparse.Namespace) -> bool:
    from stallfree.spec.designs import PAGED, design_of

    return args.scheduler is not None and design_of(load_scheduler(args.scheduler)) == PAGED


def run(args: argparse.Namespace) -> int:
    try:
        from stallfree.proofs import suite
    except ImportError as error:  # z3 or crosshair missing: the proofs extra is not installed
        print(f"stallfree prove: {error}; install the extra: pip install 'stallfree[proofs]'", file=sys.stderr)
        return 2
    from stallfree.spec import FieldTypeError, InvalidField

    def say(message: str) -> None:
        print(f"  {message}", file=sys.stderr, flush=True)

    try:
        paged = is_paged(args)
        if paged:
            rows = paged_rows(args, say)
        else:
            options = _options(args)
    except (InvalidField, FieldTypeError, ValueError, ImportError, AttributeError) as error:
        print(f"stallfree prove: {error}", file=sys.stderr)
        return 2

    if not paged:
        rows = suite.run(options, say)
    print(f"{'claim':<20} {'method':<36} {'bound':<28} {'result':<12} {'seconds':>8}")
    for row in rows:
        print(f"{row.claim:<20} {row.method:<36} {row.bound:<28} {row.result:<12} {row.seconds:>8.2f}")
    failed = [row for row in rows if row.failed]
    for row in failed:
        print(f"\n{row.claim} ({row.method}): {row.result}\n{row.detail}")
    if args.json is not None:
        try:
            write_output("--json", args.json, json.dumps([row.to_json() for row in rows], indent=2, default=str))
        except ValueError as error:  # checked before the run, yet the write failed
            print(f"stallfree prove: {error}", file=sys.stderr)
            return 2
    not_applicable = [row for row in rows if row.result.startswith("n/a")]
    judged = len(rows) - len(not_applicable)
    summary = f"\n{judged - len(failed)} of {judged} claims hold"
    summary += f"; {len(failed)} do not" if failed else ""
    summary += f"; {len(not_applicable)} not applicable" if not_applicable else ""
    print(summary)
    return 1 if failed else 0
