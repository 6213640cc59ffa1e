"""The Z3 step evaluated on concrete states, and the reference's state read into the same shape:
what ties the theorems to stallfree's code. `compare` plays a workload through the reference and,
before every step, asks the Z3 transition what the step must plan, emit and leave behind; any
difference is reported. The reference is read only through its public views (waiting, running,
free_kv, progress), never its private fields."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import z3

from stallfree.reference import Phase, Scheduler
from stallfree.spec import Config, Workload

from .policy import Policy, SymStep
from .symbolic import SymConfig, SymState, check, value


@dataclass(frozen=True, slots=True)
class RequestView:
    """One request as both sides see it; `arrived` False pads the requests past the last arrival."""

    arrived: bool
    admitted: bool
    prompt_len: int
    max_new: int
    num_prefilled: int
    num_emitted: int


@dataclass(frozen=True, slots=True)
class StepResult:
    """What a step did: the plan as (request index, n) in order, the indexes that emitted, the state after."""

    plan: tuple[tuple[int, int], ...]
    emitted: frozenset[int]
    requests: tuple[RequestView, ...]
    free_kv: int


EMPTY = RequestView(False, False, 1, 1, 0, 0)


def read_reference(scheduler: Scheduler, num_requests: int, num_added: int) -> tuple[tuple[RequestView, ...], int]:
    """The reference's state as request views (rid i is request index i), through its public views only."""
    views = []
    for rid in range(num_added):
        p = scheduler.progress(rid)
        admitted = p.phase not in (Phase.WAITING,)
        views.append(RequestView(True, admitted, p.prompt_len, p.max_new, p.num_prefilled, p.num_emitted))
    views += [EMPTY] * (num_requests - num_added)
    return tuple(views), scheduler.free_kv


class Evaluator:
    """The Z3 step for `num_requests` requests, built once, evaluated on any concrete state."""

    def __init__(self, num_requests: int, policy: Policy | None = None) -> None:
        self.config = SymConfig.fresh()
        self.state = SymState.fresh("c", num_requests, self.config)
        self.step: SymStep = (Policy() if policy is None else policy).step(self.state)

    def bind(self, config: Config, views: tuple[RequestView, ...], free_kv: int) -> list[z3.BoolRef]:
        c = self.config
        facts = [c.token_budget == config.token_budget, c.max_seqs == config.max_seqs,
                 c.kv_tokens == config.kv_tokens, self.state.free_kv == free_kv]
        for r, v in zip(self.state.requests, views, strict=True):
            facts += [r.arrived == v.arrived, r.admitted == v.admitted, r.prompt_len == v.prompt_len,
                      r.max_new == v.max_new, r.num_prefilled == v.num_prefilled, r.num_emitted == v.num_emitted]
        return facts

    def evaluate(self, config: Config, views: tuple[RequestView, ...], free_kv: int) -> StepResult:
        solver = z3.Solver()
        solver.add(self.step.defs, *self.bind(config, views, free_kv))
        if check(solver) != z3.sat:
            raise AssertionError("the Z3 step has no value on this state: its definitions contradict")
        model = solver.model()
        val = partial(value, model)
        plan = self.step.plan
        decodes = [(i, 1) for i, e in enumerate(plan) if val(e.decode)]
        chunks = [(i, int(val(e.chunk))) for i, e in enumerate(plan) if val(e.chunk) > 0]
        admits = [(i, int(val(e.first_chunk))) for i, e in enumerate(plan) if val(e.admit)]
        emitted = frozenset(i for i, flag in enumerate(self.step.emits) if val(flag))
        after = tuple(
            RequestView(bool(val(r.arrived)), bool(val(r.admitted)), int(val(r.prompt_len)), int(val(r.max_new)),
                 int(val(r.num_prefilled)), int(val(r.num_emitted)))
            for r in self.step.after.requests
        )
        return StepResult(tuple(decodes + chunks + admits), emitted, after, int(val(self.step.after.free_kv)))


def compare(workload: Workload, evaluator: Evaluator) -> Iterator[str]:
    """Play `workload` (rid i is the i-th add, all accepted) through the reference; before each step
    evaluate the Z3 step on the reference's state and yield every difference from what the reference
    then did. Yields nothing when model and code agree on every step."""
    cfg = workload.config
    num_requests = len(evaluator.state.requests)
    scheduler = Scheduler(cfg.token_budget, cfg.max_seqs, cfg.kv_tokens)
    arrivals = sorted(workload.requests, key=lambda a: a.arrival_step)
    added = 0
    step = 0
    while added < len(arrivals) or not scheduler.is_idle:
        while added < len(arrivals) and arrivals[added].arrival_step <= step:
            a = arrivals[added]
            scheduler.add(a.rid, a.prompt_len, a.max_new)
            added += 1
        views, free_kv = read_reference(scheduler, num_requests, added)
        expected = evaluator.evaluate(cfg, views, free_kv)
        plan = scheduler.schedule()
        emitted = scheduler.complete(plan)
        after, free_after = read_reference(scheduler, num_requests, added)
        got = StepResult(tuple((rid, n) for rid, n in plan), frozenset(emitted), after, free_after)
        where = f"step {step} of {workload.dumps()}"
        if got.plan != expected.plan:
            yield f"{where}: the reference planned {list(got.plan)}, the Z3 step {list(expected.plan)}"
        if got.emitted != expected.emitted or len(emitted) != len(got.emitted):
            yield f"{where}: the reference emitted {sorted(emitted)}, the Z3 step {sorted(expected.emitted)}"
        for i, (g, e) in enumerate(zip(got.requests, expected.requests, strict=True)):
            if g != e:
                yield f"{where}: request {i} after the step is {g} in the reference, {e} in the Z3 step"
        if got.free_kv != expected.free_kv:
            yield f"{where}: free KV after the step is {got.free_kv} in the reference, {expected.free_kv} in Z3"
        step += 1
