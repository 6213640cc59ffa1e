"""SGLang's scheduling policy run on a workload and logged as scheduling events, the format
`stallfree import-trace --from events` converts to trace v2 (`import_events`): a second engine's runs
checked offline by `check-trace`, beside the live kit (`sglang_adapter`).

Each step logs the arrivals handed to SGLang before it, the admissions (a request's first appearance in
a plan, with the tokens SGLang's radix cache served it, `prefix_len`: 0 for the made-up prompts), the
plan in SGLang's batch order, the tokens emitted and the requests that ended: reason `length`, or,
through the adapter with stops (`sglang_ends`), `stop` on the token SGLang's own stop check ended a
request on (its EOS, or its stop string with `SglangStopStrings`), for a request whose `stop_after` the
workload sets, or `cancel` for a request the workload cancels (through `sglang_ends`, SGLang's own
abort code): a request that ran in the step before its cancel (or, for a cancel offered while a plan
is pending, in that step) ended after that step; any other is withdrawn before the next step (its
finish logged there, out of the plan). A cancel the adapter refuses is not logged (the trace lists the
cancels the engine accepted). So SGLang's one more decode of an aborted running request is a plan
naming a cancelled rid, CANCEL's break, except after a step that did not decode it (a prefill batch):
withdrawn at the next step, that decode reads as a cancel during it. The run goes on while SGLang holds
any request, so that decode is logged for the last request alive too. A run that has not ended after
`max_steps` steps is logged without the end event, so PROGRESS at the end is left not judged, never
passed.

    python -m stallfree.conformance.engines.sglang_recorder WORKLOAD.json > events.jsonl   # .venv-sglang

(a workload with stops or cancels is run through `SglangEnds`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from stallfree.spec import CANCEL, STOP, Cancel, Workload, supports

from .sglang_adapter import SglangScheduler


def record(workload: Workload, factory: type[SglangScheduler] = SglangScheduler,
           max_steps: int | None = None) -> list[dict[str, Any]]:
    """The events of SGLang's run of `workload` (one dict per event, in order)."""
    c = workload.config
    scheduler = factory(c.token_budget, c.max_seqs, c.kv_tokens)
    stop_after = {a.rid: a.stop_after for a in workload.requests if a.stop_after is not None}
    if stop_after and STOP not in supports(scheduler):
        raise ValueError(f"the workload stops requests; {factory.__name__} has no stops (sglang_ends has)")
    if workload.cancels and CANCEL not in supports(scheduler):
        raise ValueError(f"the workload cancels requests; {factory.__name__} has no cancels (sglang_ends has)")
    run = _Run(scheduler, stop_after, workload.cancels)
    pending = sorted(workload.requests, key=lambda a: a.arrival_step)
    limit = max_steps if max_steps is not None else 4 * sum(a.prompt_len + a.max_new for a in pending) + 16 + \
        max((a.arrival_step for a in pending), default=0)
    for step in range(limit):
        if not pending and not run.left and run.idle(step):
            run.events.append({"step": step, "event": "end"})
            return run.events
        logged = len(run.events)
        while pending and pending[0].arrival_step <= step:
            a = pending.pop(0)
            scheduler.add(a.rid, a.prompt_len, a.max_new)
            run.left[a.rid], run.emitted[a.rid], run.prompts[a.rid] = a.max_new, 0, a.prompt_len
            run.events.append({"step": step, "event": "arrive", "rid": a.rid, "prompt_len": a.prompt_len,
                               "max_new": a.max_new})
        run.cancel_before(step, logged)
        run.step(step)
        if not any(e["step"] == step for e in run.events[logged:]):
            run.events.append({"step": step, "event": "step"})
    return run.events


class _Run:
    """One recorded run: the events so far and each request's account."""

    def __init__(self, scheduler: SglangScheduler, stop_after: dict[int, int], cancels: tuple[Cancel, ...]):
        self.scheduler, self.stop_after, self.cancels = scheduler, stop_after, cancels
        self.events: list[dict[str, Any]] = []
        self.left: dict[int, int] = {}  # unfinished rid -> tokens still to emit
        self.emitted: dict[int, int] = {}  # rid -> tokens emitted so far
        self.prompts: dict[int, int] = {}  # rid -> prompt_len
        self.prefilled: dict[int, int] = {}  # admitted rid -> prompt tokens planned so far
        self.admitted: set[int] = set()
        self.last_plan: set[int] = set()  # the rids of the last step's plan
        self.withdrawn: list[int] = []  # cancelled while a step ran and not in its plan: withdrawn before the next

    def idle(self, step: int) -> bool:
        """Whether SGLang holds nothing more (an aborted running request may still be due its decode), no
        cancel is due and none waits to be logged."""
        s = self.scheduler
        busy = getattr(s, "waiting", ()) or getattr(s, "chunked", None) is not None or \
            (getattr(s, "running_batch", None) is not None and not s.running_batch.is_empty())
        return not busy and not self.withdrawn and not any(c.step >= step for c in self.cancels)

    def _accepted(self, rid: object, end: bool = True) -> bool:
        """Whether SGLang's adapter takes cancel(rid) (one it refuses is no event: the trace lists the
        cancels the engine accepted), ending the request's account unless `end` is false."""
        try:
            self.scheduler.cancel(rid)  # type: ignore[attr-defined]
        except (KeyError, TypeError):
            return False
        if end:
            self.left.pop(rid, None)  # type: ignore[call-overload]
        return True

    def cancel_before(self, step: int, logged: int) -> None:
        """The cancels offered before `step`: one of a request that ran in the step before ended after that
        step (its finish is logged there); any other is withdrawn before this step."""
        ended_before = []
        for c in self.cancels:
            if c.step == step and not c.pending and self._accepted(c.rid):
                if c.rid in self.last_plan and step > 0:
                    ended_before.append({"step": step - 1, "event": "finish", "rid": c.rid, "reason": "cancel"})
                else:
                    self.withdrawn.append(c.rid)
        self.events[logged:logged] = ended_before

    def step(self, step: int) -> None:
        """Plan `step`, hand SGLang the cancels offered while it runs, and log what it emits and ends."""
        s = self.scheduler
        plan = s.schedule()
        cached = {int(r.rid): r.prefix_len for r in getattr(s.pending, "reqs", ())}
        for rid, _ in plan:
            if rid not in self.admitted:
                self.admitted.add(rid)
                self.events.append({"step": step, "event": "admit", "rid": rid, "cached": cached[rid]})
        self.events += [{"step": step, "event": "schedule", "rid": rid, "tokens": n} for rid, n in plan]
        withdrawn, self.withdrawn = self.withdrawn, []
        self.events += [{"step": step, "event": "finish", "rid": rid, "reason": "cancel"} for rid in withdrawn]
        during = [c.rid for c in self.cancels if c.step == step and c.pending and self._accepted(c.rid, end=False)]
        self.last_plan = {rid for rid, _ in plan}
        due_now = due(plan, self.prefilled, self.prompts)
        stops = [rid for rid in due_now if rid in self.left and self.stop_after.get(rid) == self.emitted[rid] + 1]
        for rid in s.complete(plan, stops) if stops else s.complete(plan):
            self.events.append({"step": step, "event": "emit", "rid": rid})
            if rid not in self.left:  # a token after its end (a planted bug or a cancel): for check-trace
                continue
            self.left[rid] -= 1
            self.emitted[rid] += 1
            if self.left[rid] == 0 or rid in stops:
                del self.left[rid]
                reason = "stop" if rid in stops else "length"
                self.events.append({"step": step, "event": "finish", "rid": rid, "reason": reason})
        for rid in during:  # unless it ended in this step: with it if it ran in it, else before the next
            if self.left.pop(rid, None) is None:
                continue
            if rid in self.last_plan:
                self.events.append({"step": step, "event": "finish", "rid": rid, "reason": "cancel"})
            else:
                self.withdrawn.append(rid)


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
    factory = SglangScheduler
    if workload.has_stops or workload.cancels:  # SGLang's stop check and abort (its Scheduler module: 17 s more)
        from .sglang_ends import SglangEnds
        factory = SglangEnds
    for event in record(workload, factory):
        print(json.dumps(event))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
