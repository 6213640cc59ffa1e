"""`stallfree trace` of a paged scheduler (one whose factory declares design "paged"): the run under
the paged monitor, a step table with the free blocks and each step's preemptions, a verdict per
paged rule (and --json of them), and with --plot the paged step view (stallfree.view.paged): what each
request ran, recomputed or lost to a preemption, and the blocks in use (--html: the same as the step
view's page). The other views (--invariants, --ms) and the --timeout watchdog are the reservation
design's trace's; a paged trace refuses them and runs without the watchdog."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stallfree import exits
from stallfree.spec import RuleViolation, Workload, play
from stallfree.spec.contract import Contract
from stallfree.spec.loader import FactoryError
from stallfree.spec.paged_monitor import PagedMonitor
from stallfree.spec.verdict import Verdict, as_json, lines
from stallfree.view.paged import PagedRecorder, entries_of
from stallfree.view.table import verdicts, wrap_entries

from .args import path_error, write_json, write_output

ENTRIES_WIDTH = 48  # the entries column; a plan that does not fit goes on under it
HEADER = f"{'step':>5}  {'entries':<{ENTRIES_WIDTH}} {'tokens':>9}  {'emitted':<14} {'finished':<10} {'free blk':>8}"


def describe(facts: Any) -> str:
    """The plan in order: `r3 decode`, `r1 chunk 7-14`, `r2 chunk 0-5 (admitted)`, `(recompute)` on a
    re-admitted request's chunks (as `stallfree.view.paged.entries_of` names them)."""
    return ", ".join(e.text for e in entries_of(facts)) or "(empty)"


def row(facts: Any, budget: int, free_blocks: int) -> str:
    """The step's row; entries that do not fit their column go on lines of their own under it."""
    emitted = " ".join(f"r{r}" for r in facts.emitted) or "-"
    ended = " ".join(f"r{t.rid}" for t in facts.ended) or "-"
    first, *more = wrap_entries([e.text for e in entries_of(facts)] or ["(empty)"], ENTRIES_WIDTH)
    line = (f"{facts.step:>5}  {first:<{ENTRIES_WIDTH}} {f'{facts.num_tokens}/{budget}':>9}  {emitted:<14} "
            f"{ended:<10} {free_blocks:>8}")
    return "\n".join([line, *(f"{'':>5}  {part}" for part in more)])


def refuse_reservation_outputs(args: argparse.Namespace) -> None:
    """Raises naming the flag when the run asks for an output only the reservation design has."""
    if args.jsonl:
        raise ValueError("--jsonl: the trace format has no preemption events; it records the reservation design only")
    drawn = [f"--{name}" for name in ("invariants", "ms") if getattr(args, name, None)]
    if drawn:
        raise ValueError(f"{', '.join(drawn)}: the reservation design's views; a paged trace prints its step table "
                         "and draws it with --plot and --html")


def workload_verdicts(checked: list[str], steps: int, violation: RuleViolation | None, adds: int,
                      registry: Any) -> list[Any]:
    """The verdicts of a played workload; a workload carries no cancels, so CANCEL was judged on none."""
    judged = verdicts(checked, steps, violation, adds, registry=registry)
    for i, j in enumerate(judged):
        if j.claim == "CANCEL" and j.verdict is Verdict.HOLDS:
            judged[i] = type(j)("CANCEL", Verdict.NOT_JUDGED, "(no cancel in a workload)")
    return judged


def trace_paged(args: argparse.Namespace, workload: Workload, factory: Callable[..., Any], contract: Contract) -> int:
    """The step table and verdicts of a paged-family design ("paged", or "prefix": its hits shown too)."""
    refuse_reservation_outputs(args)
    checked = [r.id for r in contract.select(args.rules)]  # raises naming an ID the registry does not hold
    design, registry = contract.name, contract.rules
    cfg = workload.config
    print(f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}; "
          f"scheduler {args.scheduler} ({design} design)")
    print(HEADER)

    recorder = PagedRecorder(workload, args.scheduler, design)

    def on_step(monitor: PagedMonitor, facts: Any) -> None:
        recorder.on_step(monitor, facts)
        print(row(facts, cfg.token_budget, monitor.shadow.free_blocks))
        if facts.preempted:
            victims = " ".join(f"r{t.rid}" for t in facts.preempted)
            print(f"{'':>5}  preempted: {victims} (blocks freed, back at the head)")
        for rid, cached in getattr(facts, "claimed", {}).items():
            if cached:
                print(f"{'':>5}  hit: r{rid} holds {cached} cached token(s); its chunk starts at {cached}")

    def on_add(a: Any, accepted: bool) -> None:
        recorder.on_add(a, accepted)
        if not accepted:
            print(f"{'':>5}  refused: add({a.rid}, {a.prompt_len}, {a.max_new})")

    violation = None
    steps = adds = 0
    try:
        stats = play(workload, factory, checked, on_step=on_step, on_add=on_add, contract=contract)  # type: ignore[arg-type]
        steps, adds = stats.steps, stats.accepted + stats.refused
    except RuleViolation as error:
        violation = error
    except FactoryError as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    print()
    judged = workload_verdicts(checked, steps, violation, adds, registry)
    for line in lines(judged):
        print(line)
    recorder.violation = violation
    try:
        if getattr(args, "plot", None) is not None:
            print(f"plot: {draw(recorder, args.plot)}")
        if getattr(args, "html", None) is not None:
            from stallfree.view.paged import paged_page

            write_output("--html", args.html, paged_page(recorder))
            print(f"html: {args.html}")
        write_json(args, {"scheduler": args.scheduler, "design": design, "config": workload.to_json()["config"],
                          "rules": as_json(judged)})
    except ValueError as error:  # checked before the run, yet the write failed
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    return exits.BROKEN if violation else exits.HOLDS


def draw(recorder: PagedRecorder, path: Path) -> Path:
    from stallfree.view.paged import plot_paged

    try:
        return plot_paged(recorder, path)
    except OSError as error:
        raise path_error("--plot", path, error) from None
