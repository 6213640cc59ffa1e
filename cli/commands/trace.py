"""`stallfree trace`: run a workload through the reference (or any scheduler) under the monitor
and print the step table and a verdict per rule."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from stallfree.spec import (
    RULE_IDS,
    Arrival,
    Config,
    FieldTypeError,
    InvalidField,
    Monitor,
    Request,
    RuleViolation,
    Shadow,
    StepFacts,
    Workload,
    play,
    refusal,
)

from ..steptable import HEADER, row, verdicts
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
    p.add_argument("--scheduler", default="stallfree.reference:Scheduler", metavar="MODULE:FACTORY",
                   help="the scheduler to trace (default: the reference; `paged` for stallfree.paged:Scheduler, "
                        "judged by the paged monitor)")
    p.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID", help="check only these rules")
    p.add_argument("--jsonl", type=Path, metavar="FILE",
                   help="also write the run as a JSON Lines trace, the format `stallfree check-trace` reads")


def workload_from(args: argparse.Namespace) -> Workload:
    if args.example:
        return EXAMPLES[args.example]
    if args.workload:
        return read_workload(args.workload)
    if not args.request:
        raise InvalidField("give --example hand, --workload FILE or at least one --request")
    return Workload(Config(args.budget, args.max_seqs, args.kv), tuple(args.request))


def run(args: argparse.Namespace) -> int:
    from stallfree.spec.designs import PAGED, design_of

    try:
        workload = workload_from(args)
        loaded = load_scheduler(args.scheduler)
        factory = guarded(loaded, args.scheduler)
        if args.jsonl:
            check_output_file("--jsonl", args.jsonl)
        if design_of(loaded) == PAGED:
            from .paged_trace import trace_paged

            return trace_paged(args, workload, factory)
    except (InvalidField, FieldTypeError, ValueError) as error:
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


def trace(args: argparse.Namespace, workload: Workload, factory: Callable[..., Any], jsonl: IO[str] | None) -> int:
    from stallfree.conformance.trace.tracefile import TraceWriter

    cfg = workload.config
    writer = TraceWriter(jsonl, cfg, {"scheduler": args.scheduler}) if jsonl is not None else None
    print(f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}; "
          f"scheduler {args.scheduler}")
    print(HEADER)
    # The requests as the contract knows them, so a refusal is explained by what the spec says.
    offered = Shadow(cfg)

    def on_add(a: Arrival, accepted: bool) -> None:
        if writer is not None:
            writer.offered(a.rid, a.prompt_len, a.max_new, accepted)
        if accepted:
            offered.accept(Request(a.rid, a.prompt_len, a.max_new))
            return
        why = refusal(offered, a.rid, a.prompt_len, a.max_new) or "the contract would accept it (NEVER-FIT not checked)"
        print(f"{'':>5}  refused: add({a.rid}, {a.prompt_len}, {a.max_new}): {why}")

    def on_step(monitor: Monitor, facts: StepFacts) -> None:
        print(row(facts, cfg.token_budget, monitor.shadow.free_kv))
        if writer is not None:
            writer.step(facts.step, facts.plan, facts.emitted, [t.rid for t in facts.finished])

    violation = None
    steps = adds = 0
    try:
        stats = play(workload, factory, args.rules, on_step=on_step, on_add=on_add)
        steps, adds = stats.steps, stats.accepted + stats.refused
        # A run stopped by a broken rule, or still pending at the work bound, has no end line: it did
        # not end (as record_trace writes it).
        if writer is not None and stats.stopped_at_bound is None:
            writer.end()
    except RuleViolation as error:
        violation = error
    except FactoryError as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return 2
    print()
    for line in verdicts(args.rules or RULE_IDS, steps, violation, adds):
        print(line)
    return 1 if violation else 0
