"""`stallfree trace` of a paged scheduler (one whose factory declares design "paged"): the run under
the paged monitor, a step table with the free blocks and each step's preemptions, a verdict per
paged rule."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from stallfree.spec import RuleViolation, Workload, play
from stallfree.spec.paged_monitor import PagedMonitor
from stallfree.spec.paged_rules import PAGED_RULES, select

from ..steptable import row, verdicts
from .args import FactoryError

HEADER_PAGED = f"{'step':>5}  {'entries':<44} {'tokens':>9}  {'emitted':<14} {'finished':<10} {'free blk':>8}"


def trace_paged(args: argparse.Namespace, workload: Workload, factory: Callable[..., Any]) -> int:
    if args.jsonl:
        raise ValueError("--jsonl: the trace format has no preemption events; it records the reservation design only")
    checked = [r.id for r in select(args.rules)]  # raises naming an ID the paged registry does not hold
    cfg = workload.config
    print(f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}; "
          f"scheduler {args.scheduler} (paged design)")
    print(HEADER_PAGED)

    def on_step(monitor: PagedMonitor, facts: Any) -> None:
        print(row(facts, cfg.token_budget, monitor.shadow.free_blocks))
        if facts.preempted:
            victims = " ".join(f"r{t.rid}" for t in facts.preempted)
            print(f"{'':>5}  preempted: {victims} (blocks freed, back at the head)")

    def on_add(a: Any, accepted: bool) -> None:
        if not accepted:
            print(f"{'':>5}  refused: add({a.rid}, {a.prompt_len}, {a.max_new})")

    violation = None
    steps = adds = 0
    try:
        stats = play(workload, factory, checked, on_step=on_step, on_add=on_add, monitor=PagedMonitor)  # type: ignore[arg-type]
        steps, adds = stats.steps, stats.accepted + stats.refused
    except RuleViolation as error:
        violation = error
    except FactoryError as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return 2
    print()
    for line in verdicts(checked, steps, violation, adds, PAGED_RULES):
        if line.startswith("CANCEL") and " holds " in line:
            line = f"{'CANCEL':<16} not exercised (a workload carries no cancels)"
        print(line)
    return 1 if violation else 0
