"""`stallfree trace` of a paged scheduler (one whose factory declares design "paged"): the run under
the paged monitor, a step table with the free blocks and each step's preemptions, a verdict per
paged rule (and --json of them). The step views (--plot, --html, --invariants, --ms) and the
--timeout watchdog are the reservation design's trace's; a paged trace refuses the views and runs
without the watchdog."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from stallfree import exits
from stallfree.spec import RuleViolation, Workload, play
from stallfree.spec.loader import FactoryError
from stallfree.spec.paged_monitor import PagedMonitor
from stallfree.spec.verdict import Verdict, as_json, lines

from ..steptable import verdicts
from .args import write_json

HEADER = f"{'step':>5}  {'entries':<48} {'tokens':>9}  {'emitted':<14} {'finished':<10} {'free blk':>8}"


def describe(facts: Any) -> str:
    """The plan in order: `r3 decode`, `r1 chunk 7-14`, `r2 chunk 0-5 (admitted)`, `(recompute)` on a
    re-admitted request's chunks."""
    kinds: dict[int, str] = {t.rid: "decode" for t, _ in facts.decodes}
    for c in facts.chunks + facts.admitted:
        tail = " (admitted)" if c in facts.admitted else ""
        tail += " (recompute)" if c.is_recompute else ""
        kinds[c.track.rid] = f"chunk {c.start}-{c.start + c.n}{tail}"
    return ", ".join(f"r{rid} {kinds.get(rid, f'n={n}')}" for rid, n in facts.plan) or "(empty)"


def row(facts: Any, budget: int, free_blocks: int) -> str:
    emitted = " ".join(f"r{r}" for r in facts.emitted) or "-"
    ended = " ".join(f"r{t.rid}" for t in facts.ended) or "-"
    return (f"{facts.step:>5}  {describe(facts):<48} {f'{facts.num_tokens}/{budget}':>9}  {emitted:<14} "
            f"{ended:<10} {free_blocks:>8}")


def trace_paged(args: argparse.Namespace, workload: Workload, factory: Callable[..., Any],
                design: str = "paged") -> int:
    """The step table and verdicts of a paged-family design ("paged", or "prefix": its hits shown too)."""
    if args.jsonl:
        raise ValueError("--jsonl: the trace format has no preemption events; it records the reservation design only")
    drawn = [f"--{name}" for name in ("plot", "html", "invariants", "ms") if getattr(args, name, None)]
    if drawn:
        raise ValueError(f"{', '.join(drawn)}: the step views draw the reservation design; a paged trace prints its "
                         "step table only")
    from stallfree.spec.designs import MONITORS, REGISTRIES, rules_of

    checked = [r.id for r in rules_of(design, args.rules)]  # raises naming an ID the registry does not hold
    monitor_class, registry = MONITORS[design], REGISTRIES[design]
    cfg = workload.config
    print(f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}; "
          f"scheduler {args.scheduler} ({design} design)")
    print(HEADER)

    def on_step(monitor: PagedMonitor, facts: Any) -> None:
        print(row(facts, cfg.token_budget, monitor.shadow.free_blocks))
        if facts.preempted:
            victims = " ".join(f"r{t.rid}" for t in facts.preempted)
            print(f"{'':>5}  preempted: {victims} (blocks freed, back at the head)")
        for rid, cached in getattr(facts, "claimed", {}).items():
            if cached:
                print(f"{'':>5}  hit: r{rid} holds {cached} cached token(s); its chunk starts at {cached}")

    def on_add(a: Any, accepted: bool) -> None:
        if not accepted:
            print(f"{'':>5}  refused: add({a.rid}, {a.prompt_len}, {a.max_new})")

    violation = None
    steps = adds = 0
    try:
        stats = play(workload, factory, checked, on_step=on_step, on_add=on_add, monitor=monitor_class)  # type: ignore[arg-type]
        steps, adds = stats.steps, stats.accepted + stats.refused
    except RuleViolation as error:
        violation = error
    except FactoryError as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    print()
    judged = verdicts(checked, steps, violation, adds, registry=registry)
    for i, j in enumerate(judged):  # a workload carries no cancels: CANCEL was judged on none
        if j.claim == "CANCEL" and j.verdict is Verdict.HOLDS:
            judged[i] = type(j)("CANCEL", Verdict.NOT_JUDGED, "(no cancel in a workload)")
    for line in lines(judged):
        print(line)
    try:
        write_json(args, {"scheduler": args.scheduler, "design": design, "config": workload.to_json()["config"],
                          "rules": as_json(judged)})
    except ValueError as error:  # checked before the run, yet the write failed
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    return exits.BROKEN if violation else exits.HOLDS
