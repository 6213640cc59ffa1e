"""SGLang's scheduling policy run on a workload and logged as scheduling events, the format
`stallfree import-trace --from events` converts to trace v2 (`import_events`): a second engine's runs
checked offline by `check-trace`, beside the live kit (`sglang_adapter`).

Each step logs the arrivals handed to SGLang before it, the admissions (a request's first appearance in
a plan, with the tokens SGLang's radix cache served it, `prefix_len`: 0 for the made-up prompts), the
plan in SGLang's batch order, the tokens emitted and the requests that ended (reason `length`: no stop
token is sampled). A run that has not ended after `max_steps` steps is logged without the end event,
so PROGRESS at the end is left not judged, never passed.

    python -m stallfree.conformance.engines.sglang_recorder WORKLOAD.json > events.jsonl   # .venv-sglang
"""

from __future__ import annotations

import json
import sys
from typing import Any

from stallfree.spec import Workload

from .sglang_adapter import SglangScheduler


def record(workload: Workload, factory: type[SglangScheduler] = SglangScheduler,
           max_steps: int | None = None) -> list[dict[str, Any]]:
    """The events of SGLang's run of `workload` (one dict per event, in order)."""
    c = workload.config
    scheduler = factory(c.token_budget, c.max_seqs, c.kv_tokens)
    pending = sorted(workload.requests, key=lambda a: a.arrival_step)
    limit = max_steps if max_steps is not None else 4 * sum(a.prompt_len + a.max_new for a in pending) + 16 + \
        max((a.arrival_step for a in pending), default=0)
    left: dict[int, int] = {}  # unfinished rid -> tokens still to emit
    admitted: set[int] = set()
    events: list[dict[str, Any]] = []
    for step in range(limit):
        if not pending and not left:
            events.append({"step": step, "event": "end"})
            return events
        logged = len(events)
        while pending and pending[0].arrival_step <= step:
            a = pending.pop(0)
            scheduler.add(a.rid, a.prompt_len, a.max_new)
            left[a.rid] = a.max_new
            events.append({"step": step, "event": "arrive", "rid": a.rid, "prompt_len": a.prompt_len,
                           "max_new": a.max_new})
        plan = scheduler.schedule()
        cached = {int(r.rid): r.prefix_len for r in getattr(scheduler.pending, "reqs", ())}
        for rid, _ in plan:
            if rid not in admitted:
                admitted.add(rid)
                events.append({"step": step, "event": "admit", "rid": rid, "cached": cached[rid]})
        events += [{"step": step, "event": "schedule", "rid": rid, "tokens": n} for rid, n in plan]
        for rid in scheduler.complete(plan):
            events.append({"step": step, "event": "emit", "rid": rid})
            left[rid] -= 1
            if left[rid] == 0:
                del left[rid]
                events.append({"step": step, "event": "finish", "rid": rid, "reason": "length"})
        if len(events) == logged:
            events.append({"step": step, "event": "step"})
    return events


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m stallfree.conformance.engines.sglang_recorder WORKLOAD.json > EVENTS.jsonl",
              file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8") as f:
            workload = Workload.loads(f.read())
    except (OSError, ValueError) as error:
        print(f"workload {args[0]}: {error}", file=sys.stderr)
        return 2
    for event in record(workload):
        print(json.dumps(event))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
