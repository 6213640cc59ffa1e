"""`stallfree trace`: run a workload through the reference (or any scheduler) under the monitor
and print the step table and a verdict per rule."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from stallfree.sim.policies import CONTRACTS as VARIANT_CONTRACTS
from stallfree.sim.policies import POLICIES
from stallfree.spec import (
    RULES,
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
from stallfree.spec.contract import Contract
from stallfree.spec.contracts import by_name
from stallfree.spec.workload import BudgetChange

from ..steptable import HEADER, row, verdicts
from .args import (
    FactoryError,
    budget_change,
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
# The variants' examples (docs/variants.md): a prompt chunked around decodes (aligned chunks), four
# streams and a budget dropped to 2 (rotation), a low-priority request amid high-priority ones (aging).
ALIGNED_TRACE = Workload(
    Config(token_budget=24, max_seqs=4, kv_tokens=256),
    (Arrival(0, 8, 6, 0), Arrival(1, 60, 3, 1), Arrival(2, 20, 2, 2)),
)
BUDGET_DROP = Workload(
    Config(token_budget=8, max_seqs=4, kv_tokens=256),
    tuple(Arrival(i, 2, 8, 0) for i in range(4)), (BudgetChange(2, 2), BudgetChange(10, 8)),
)
PRIORITY_STREAM = Workload(
    Config(token_budget=8, max_seqs=1, kv_tokens=256),
    (Arrival(0, 4, 8, 0, 0), Arrival(1, 4, 2, 0, 0), *(Arrival(2 + i, 4, 2, 1 + 2 * i, 3) for i in range(12))),
)
EXAMPLES = {
    "hand": HAND_TRACE, "aligned": ALIGNED_TRACE, "budget-drop": BUDGET_DROP, "priority-stream": PRIORITY_STREAM,
}


def configure(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group()
    source.add_argument("--example", choices=sorted(EXAMPLES),
                        help="a built-in workload (hand: the contract's hand trace; aligned, budget-drop, "
                             "priority-stream: the variants', docs/variants.md)")
    source.add_argument("--workload", type=Path, metavar="FILE", help="a JSON workload (see stallfree.spec.workload)")
    p.add_argument("--request", type=request_spec, action="append", default=[],
                   metavar="RID:PROMPT:MAX_NEW[@STEP][/PRIORITY]",
                   help="a request arriving before step STEP (default 0), with a priority under a priority "
                        "contract; repeatable")
    p.add_argument("--budget-at", type=budget_change, action="append", default=[], metavar="STEP:B",
                   help="set_budget(B) before step STEP (a budget-change contract); repeatable")
    p.add_argument("--contract", default=None, metavar="NAME",
                   help="judge under a variant's contract: aligned[-B], budget-change, rotation, aging[-A], priority "
                        "(default: the reference's, or the named variant's own)")
    p.add_argument("--budget", type=positive_int, default=8, help="token budget B (default 8)")
    p.add_argument("--max-seqs", type=positive_int, default=4, help="slots S (default 4)")
    p.add_argument("--kv", type=positive_int, default=256, help="KV capacity K in tokens (default 256)")
    p.add_argument("--scheduler", default="stallfree.reference:Scheduler", metavar="NAME|MODULE:FACTORY",
                   help="the scheduler to trace (default: the reference); a name of `stallfree simulate` too")
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
    return Workload(Config(args.budget, args.max_seqs, args.kv), tuple(args.request), tuple(args.budget_at))


def run(args: argparse.Namespace) -> int:
    try:
        workload = workload_from(args)
        if args.budget_at and (args.example or args.workload):
            workload = replace(workload, budgets=tuple(sorted(args.budget_at, key=lambda c: c.step)))
        factory = guarded(load_scheduler(POLICIES.get(args.scheduler, args.scheduler)), args.scheduler)
        name = args.contract or VARIANT_CONTRACTS.get(args.scheduler)
        contract = by_name(name) if name else None
        if args.jsonl:
            check_output_file("--jsonl", args.jsonl)
    except (InvalidField, FieldTypeError, ValueError) as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return 2
    try:
        jsonl = args.jsonl.open("w") if args.jsonl else None
    except OSError as error:
        print(f"stallfree trace: {path_error('--jsonl', args.jsonl, error)}", file=sys.stderr)
        return 2
    try:
        return trace(args, workload, factory, jsonl, contract)
    finally:
        if jsonl is not None:
            jsonl.close()


def trace(
    args: argparse.Namespace, workload: Workload, factory: Callable[..., Any], jsonl: IO[str] | None,
    contract: Contract | None = None,
) -> int:
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
            writer.offered(a.rid, a.prompt_len, a.max_new, accepted, a.priority)
        if accepted:
            offered.accept(Request(a.rid, a.prompt_len, a.max_new))
            return
        why = refusal(offered, a.rid, a.prompt_len, a.max_new) or "the contract would accept it (NEVER-FIT not checked)"
        print(f"{'':>5}  refused: add({a.rid}, {a.prompt_len}, {a.max_new}): {why}")

    budgets = [cfg.token_budget]  # the budget in force at the last step written

    def on_step(monitor: Monitor, facts: StepFacts) -> None:
        budget = monitor.shadow.config.token_budget  # set_budget() may have changed it before this step
        print(row(facts, budget, monitor.shadow.free_kv))
        if writer is not None:
            changed = budget if budget != budgets[-1] else None
            writer.step(facts.step, facts.plan, facts.emitted, [t.rid for t in facts.finished], changed)
        budgets.append(budget)

    violation = None
    steps = adds = 0
    try:
        stats = play(workload, factory, args.rules, on_step=on_step, on_add=on_add, contract=contract)
        steps, adds = stats.steps, stats.accepted + stats.refused
        # A run stopped by a broken rule, or still pending at the work bound, has no end line: it did
        # not end (as record_trace writes it).
        if writer is not None and stats.stopped_at_bound is None:
            writer.end()
    except RuleViolation as error:
        violation = error
    except (FactoryError, InvalidField) as error:  # InvalidField: a budget schedule or priorities, no contract for them
        print(f"stallfree trace: {error}", file=sys.stderr)
        return 2
    print()
    if contract is not None:
        print(f"contract {contract.name} (docs/variants.md)")
    registry = RULES if contract is None else contract.rules
    for line in verdicts(args.rules or [r.id for r in registry], steps, violation, adds, registry):
        print(line)
    return 1 if violation else 0
