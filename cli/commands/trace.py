"""`stallfree trace`: run a workload through the reference (or any scheduler) under the monitor
and print the step table and a verdict per rule."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from stallfree.spec import (
    Arrival,
    Config,
    FieldTypeError,
    InvalidField,
    StepFacts,
    Workload,
)
from stallfree.view.record import Offer

from ..explain import Nondeterministic, explain
from ..steptable import header, verdicts
from ..stepviews import add_view_arguments, check_view_arguments, pricing, wants_views, write_views
from .args import (
    FactoryError,
    check_output_file,
    guarded,
    load_scheduler,
    path_error,
    positive_int,
    read_workload,
    request_spec,
    rule_list,
)

NAME = "trace"
HELP = "run requests through a scheduler under the monitor; print the step table and rule verdicts"

# The hand trace of the contract: budget 8, one request decoding, a 20-token prompt arrives.
HAND_TRACE = Workload(
    Config(token_budget=8, max_seqs=4, kv_tokens=64),
    (Arrival(0, 8, 6, 0), Arrival(1, 20, 3, 1)),
)
EXAMPLES = {"hand": HAND_TRACE}


def configure(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group()
    source.add_argument("--example", choices=sorted(EXAMPLES),
                        help="a built-in workload (hand: the contract's hand trace)")
    source.add_argument("--workload", type=Path, metavar="FILE", help="a JSON workload (see stallfree.spec.workload)")
    p.add_argument("--request", type=request_spec, action="append", default=[], metavar="RID:PROMPT:MAX_NEW[@STEP]",
                   help="a request arriving before step STEP (default 0); repeatable")
    p.add_argument("--budget", type=positive_int, default=8, help="token budget B (default 8)")
    p.add_argument("--max-seqs", type=positive_int, default=4, help="slots S (default 4)")
    p.add_argument("--kv", type=positive_int, default=256, help="KV capacity K in tokens (default 256)")
    p.add_argument("--scheduler", default="stallfree.reference:Scheduler", metavar="NAME|MODULE:FACTORY",
                   help="the scheduler to trace: the reference (default), a policy `simulate` names "
                   "(reference, prefill-first, unchunked) or any plain-protocol MODULE:FACTORY")
    p.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID", help="check only these rules")
    p.add_argument("--jsonl", type=Path, metavar="FILE",
                   help="also write the run as a JSON Lines trace, the format `stallfree check-trace` reads")
    add_view_arguments(p)


def workload_from(args: argparse.Namespace) -> Workload:
    if args.example:
        return EXAMPLES[args.example]
    if args.workload:
        return read_workload(args.workload)
    if not args.request:
        raise InvalidField("give --example hand, --workload FILE or at least one --request")
    return Workload(Config(args.budget, args.max_seqs, args.kv), tuple(args.request))


def run(args: argparse.Namespace) -> int:
    try:
        workload = workload_from(args)
        factory = guarded(load_scheduler(policy_target(args.scheduler)), args.scheduler)
        if args.jsonl:
            check_output_file("--jsonl", args.jsonl)
        check_view_arguments(args)
    except (InvalidField, FieldTypeError, ValueError, ImportError) as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return 2
    try:
        jsonl = args.jsonl.open("w") if args.jsonl else None
    except OSError as error:
        print(f"stallfree trace: {path_error('--jsonl', args.jsonl, error)}", file=sys.stderr)
        return 2
    try:
        return trace(args, workload, factory, jsonl)
    finally:
        if jsonl is not None:
            jsonl.close()


def policy_target(name: str) -> str:
    """A policy `stallfree simulate` names (reference, prefill-first, unchunked) as MODULE:FACTORY."""
    from stallfree.sim.policies import POLICIES

    return POLICIES.get(name, name)


def trace(args: argparse.Namespace, workload: Workload, factory: Callable[..., Any], jsonl: IO[str] | None) -> int:
    from stallfree.conformance.tracefile import TraceWriter

    cfg = workload.config
    writer = TraceWriter(jsonl, cfg, {"scheduler": args.scheduler}) if jsonl is not None else None
    price = pricing(args)
    print(f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}; "
          f"scheduler {args.scheduler}")
    if price is not None:
        print(f"ms: {price.describe()}")
    print(header(cfg.token_budget, with_ms=price is not None))

    def on_offer(offer: Offer) -> None:
        if writer is not None:
            a = offer.arrival
            writer.offered(a.rid, a.prompt_len, a.max_new, offer.accepted)

    def on_step(_view: object, facts: StepFacts) -> None:
        if writer is not None:
            writer.step(facts.step, facts.plan, facts.emitted, [t.rid for t in facts.finished])

    try:
        done = explain(workload, factory, args.rules, args.scheduler, print, price,
                       getattr(args, "keep_going", False), on_step, on_offer, keep=wants_views(args))
    except (FactoryError, Nondeterministic) as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return 2
    recording = done.recording
    stats, violation = recording.stats, recording.violation
    # A run stopped by a broken rule, or still pending at the work bound, has no end line: it did
    # not end (as record_trace writes it).
    if writer is not None and stats is not None and "stopped_at_bound" not in stats.extra:
        writer.end()
    steps = stats.steps if stats is not None else 0
    adds = stats.accepted + stats.refused if stats is not None else 0
    print()
    for line in verdicts(done.checked, steps, violation, adds, done.broken):
        print(line)
    try:
        for line in write_views(args, recording, price, done.broken):
            print(line)
    except ValueError as error:  # checked before the run, yet a write failed
        print(f"stallfree trace: {error}", file=sys.stderr)
        return 2
    return 1 if violation or done.broken else 0
