"""SGLang's scheduling policy run on a workload and logged as scheduling events, the format
`stallfree import-trace --from events` converts to trace v2 (`import_events`): a second engine's runs
checked offline by `check-trace`, beside the live kit (`sglang_adapter`).

Each step logs the arrivals handed to SGLang before it, the admissions (a request's first appearance in
a plan, with the tokens SGLang's radix cache served it, `prefix_len`: 0 for the made-up prompts), the
plan in SGLang's batch order, the tokens emitted and the requests that ended: reason `length`, or,
through the adapter with stops (`sglang_ends`), `stop` on the token SGLang's own stop check ended a
request on (its EOS, or its stop string with `SglangStopStrings`), for a request whose `stop_after` the
workload sets. Cancels are not logged (a workload with cancels is refused). A run that has not ended
after `max_steps` steps is logged without the end event, so PROGRESS at the end is left not judged,
never passed.

    python -m stallfree.conformance.engines.sglang_recorder WORKLOAD.json > events.jsonl   # .venv-sglang

(a workload with stops is run through `SglangEnds`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from stallfree.spec import STOP, Workload, supports

from .sglang_adapter import SglangScheduler


def record(workload: Workload, factory: type[SglangScheduler] = SglangScheduler,
           max_steps: int | None = None) -> list[dict[str, Any]]:
    """The events of SGLang's run of `workload` (one dict per event, in order)."""
    if workload.cancels:
        raise ValueError("the SGLang recorder logs no cancels: the workload has cancels")
    c = workload.config
    scheduler = factory(c.token_budget, c.max_seqs, c.kv_tokens)
    stop_after = {a.rid: a.stop_after for a in workload.requests if a.stop_after is not None}
    if stop_after and STOP not in supports(scheduler):
        raise ValueError(f"the workload stops requests; {factory.__name__} has no stops (sglang_ends has)")
    prefilled: dict[int, int] = {}  # admitted rid -> prompt tokens planned so far
    pending = sorted(workload.requests, key=lambda a: a.arrival_step)
    limit = max_steps if max_steps is not None else 4 * sum(a.prompt_len + a.max_new for a in pending) + 16 + \
        max((a.arrival_step for a in pending), default=0)
    left: dict[int, int] = {}  # unfinished rid -> tokens still to emit
    emitted: dict[int, int] = {}  # rid -> tokens emitted so far
    prompts: dict[int, int] = {}  # rid -> prompt_len
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
            left[a.rid], emitted[a.rid], prompts[a.rid] = a.max_new, 0, a.prompt_len
            events.append({"step": step, "event": "arrive", "rid": a.rid, "prompt_len": a.prompt_len,
                           "max_new": a.max_new})
        plan = scheduler.schedule()
        cached = {int(r.rid): r.prefix_len for r in getattr(scheduler.pending, "reqs", ())}
        for rid, _ in plan:
            if rid not in admitted:
                admitted.add(rid)
                events.append({"step": step, "event": "admit", "rid": rid, "cached": cached[rid]})
        events += [{"step": step, "event": "schedule", "rid": rid, "tokens": n} for rid, n in plan]
        stops = [rid for rid in due(plan, prefilled, prompts) if stop_after.get(rid) == emitted[rid] + 1]
        for rid in scheduler.complete(plan, stops) if stops else scheduler.complete(plan):
            events.append({"step": step, "event": "emit", "rid": rid})
            if rid not in left:  # a token after its end (a planted bug): logged, for check-trace to judge
                continue
            left[rid] -= 1
            emitted[rid] += 1
            if left[rid] == 0 or rid in stops:
                del left[rid]
                reason = "stop" if rid in stops else "length"
                events.append({"step": step, "event": "finish", "rid": rid, "reason": reason})
        if len(events) == logged:
            events.append({"step": step, "event": "step"})
    return events


def due(plan: list[tuple[int, int]], prefilled: dict[int, int], prompts: dict[int, int]) -> list[int]:
    """The rids of `plan` due a token when it runs: decodes and prompts it completes (counting its chunks
    into `prefilled`)."""
    found = []
    for rid, n in plan:
        if prefilled.get(rid, 0) < prompts[rid]:
            prefilled[rid] = prefilled.get(rid, 0) + n
            if prefilled[rid] < prompts[rid]:
                continue
        found.append(rid)
    return found


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
    if workload.cancels:
        print(f"workload {args[0]}: the SGLang recorder logs no cancels: the workload has cancels", file=sys.stderr)
        return 2
    factory = SglangScheduler
    if workload.has_stops:  # SGLang's own stop check (importing its Scheduler module: about 17 s more)
        from .sglang_ends import SglangEnds
        factory = SglangEnds
    for event in record(workload, factory):
        print(json.dumps(event))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
