"""The Z3 step evaluated on concrete states, and a scheduler's state read into the same shape: what
ties the theorems to stallfree's code.

A scheduler is read through the contract, never its private fields: the monitor's shadow gives each
unfinished request (running ones in admission order, then waiting ones in arrival order: request
index i), its lengths and progress; the scheduler's own `free_kv` (the shadow's where it shows none)
gives the free KV. `step_differences` evaluates the Z3 step on that state, lets the scheduler step
under the monitor, and reports every difference in the plan (entries and their order), the emitted
requests, any request's progress after the step, or the free KV after it; a broken rule is a
difference too, since the Z3 step keeps every rule. `compare` does so before every step of a
workload, for at most a bound of steps, so a scheduler that never finishes is reported, not waited on.

Two evaluators give the Z3 step's value: `Evaluator` asks Z3 (a solver with the state fixed), and
`CompiledStep` runs the same terms compiled to Python (`compiled`), thousands of times faster; the
tests hold them equal on random states.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import z3

from stallfree.reference import Scheduler
from stallfree.spec import Config, Monitor, RuleViolation, Workload

from .compiled import compile_terms
from .policy import Policy, SymStep
from .symbolic import SymConfig, SymState, check, value

FIELDS_PER_REQUEST = 11  # decode, chunk, admit, first_chunk, emits, then the six fields after the step


@dataclass(frozen=True, slots=True)
class RequestView:
    """One request as both sides see it; `arrived` False pads the indexes past the last request."""

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


class _Terms:
    """The Z3 step for `num_requests` requests as flat lists: its inputs and its outputs."""

    def __init__(self, num_requests: int, policy: Policy | None = None) -> None:
        self.policy = Policy() if policy is None else policy
        self.num_requests = num_requests
        self.config = SymConfig.fresh()
        self.state = SymState.fresh("c", num_requests, self.config)
        self.step: SymStep = self.policy.step(self.state)
        c = self.config
        self.inputs: list[Any] = [c.token_budget, c.max_seqs, c.kv_tokens, self.state.free_kv]
        for r in self.state.requests:
            self.inputs += [r.arrived, r.admitted, r.prompt_len, r.max_new, r.num_prefilled, r.num_emitted]
        self.outputs: list[Any] = []
        for e, emits, a in zip(self.step.plan, self.step.emits, self.step.after.requests, strict=True):
            self.outputs += [e.decode, e.chunk, e.admit, e.first_chunk, emits,
                             a.arrived, a.admitted, a.prompt_len, a.max_new, a.num_prefilled, a.num_emitted]
        self.outputs.append(self.step.after.free_kv)

    def values(self, config: Config, views: Sequence[RequestView], free_kv: int) -> list[Any]:
        if len(views) > self.num_requests:
            raise ValueError(f"{len(views)} requests in the state; this Z3 step has {self.num_requests}")
        padded = list(views) + [EMPTY] * (self.num_requests - len(views))
        values: list[Any] = [config.token_budget, config.max_seqs, config.kv_tokens, free_kv]
        for v in padded:
            values += [v.arrived, v.admitted, v.prompt_len, v.max_new, v.num_prefilled, v.num_emitted]
        return values

    def result(self, out: Sequence[Any]) -> StepResult:
        decodes, chunks, admits, emitted, after = [], [], [], set(), []
        for i in range(self.num_requests):
            decode, chunk, admit, first_chunk, emits, *fields = out[i * FIELDS_PER_REQUEST:(i + 1) * FIELDS_PER_REQUEST]
            if decode:
                decodes.append((i, 1))
            if chunk > 0:
                chunks.append((i, int(chunk)))
            if admit:
                admits.append((i, int(first_chunk)))
            if emits:
                emitted.add(i)
            after.append(RequestView(bool(fields[0]), bool(fields[1]), *(int(f) for f in fields[2:])))
        return StepResult(tuple(decodes + chunks + admits), frozenset(emitted), tuple(after), int(out[-1]))


class Evaluator(_Terms):
    """The Z3 step's value on a concrete state, asked of Z3 itself."""

    def evaluate(self, config: Config, views: Sequence[RequestView], free_kv: int) -> StepResult:
        solver = z3.Solver()
        solver.add(self.step.defs)
        solver.add(*[term == v for term, v in zip(self.inputs, self.values(config, views, free_kv), strict=True)])
        if check(solver) != z3.sat:
            raise AssertionError("the Z3 step has no value on this state: its definitions contradict")
        model = solver.model()
        return self.result([value(model, term) for term in self.outputs])


class CompiledStep(_Terms):
    """The Z3 step's value on a concrete state, from its terms compiled to Python."""

    def __init__(self, num_requests: int, policy: Policy | None = None) -> None:
        super().__init__(num_requests, policy)
        self.run = compile_terms(self.inputs, self.step.defs, self.outputs)

    def evaluate(self, config: Config, views: Sequence[RequestView], free_kv: int) -> StepResult:
        return self.result(self.run(self.values(config, views, free_kv)))


class StepModel(Protocol):
    def evaluate(self, config: Config, views: Sequence[RequestView], free_kv: int) -> StepResult: ...


def read(monitor: Monitor) -> tuple[list[int], tuple[RequestView, ...], int]:
    """The state `monitor` follows, as the Z3 state: (rid of each index, the request views, free KV).
    Finished requests are left out: the Z3 step does nothing with them but keep them finished."""
    shadow = monitor.shadow
    tracks = [*shadow.running.values(), *shadow.waiting]
    views = tuple(RequestView(True, t.admitted_at is not None, t.request.prompt_len, t.request.max_new,
                              t.num_prefilled, t.num_emitted) for t in tracks)
    return [t.rid for t in tracks], views, _free_kv(monitor)


def _free_kv(monitor: Monitor) -> int:
    shown = getattr(monitor.scheduler, "free_kv", None)
    return shown if type(shown) is int else monitor.shadow.free_kv


def step_differences(monitor: Monitor, model: StepModel, where: str) -> list[str]:
    """Evaluate the Z3 step on the state `monitor` follows, let the scheduler step under the monitor,
    and return every difference (empty when code and model agree)."""
    rids, before, free_kv = read(monitor)
    expected = model.evaluate(monitor.config, before, free_kv)
    try:
        facts = monitor.step()
    except RuleViolation as violation:
        return [f"{where}: the scheduler broke {violation.rule} (the Z3 step keeps every rule): {violation}"]
    index = {rid: i for i, rid in enumerate(rids)}
    plan = tuple((index.get(rid, f"rid {rid}"), n) for rid, n in facts.plan)
    emitted = frozenset(index.get(rid, -1) for rid in facts.emitted)
    shadow = monitor.shadow
    after = []
    for rid, view in zip(rids, before, strict=True):
        track = shadow.tracks.get(rid)
        if track is None:  # finished on this step
            after.append(RequestView(True, True, view.prompt_len, view.max_new, view.prompt_len, view.max_new))
        else:
            after.append(RequestView(True, track.admitted_at is not None, view.prompt_len, view.max_new,
                                     track.num_prefilled, track.num_emitted))
    after += [EMPTY] * (len(expected.requests) - len(after))
    differences = []
    if plan != expected.plan:
        differences.append(f"{where}: the scheduler planned {list(plan)}, the Z3 step {list(expected.plan)} "
                           f"(request index: rid {rids})")
    if emitted != expected.emitted or len(facts.emitted) != len(emitted):
        differences.append(f"{where}: the scheduler emitted {sorted(emitted)}, the Z3 step {sorted(expected.emitted)}")
    for i, (got, want) in enumerate(zip(after, expected.requests, strict=True)):
        if got != want:
            differences.append(f"{where}: request {i} after the step is {got} in the scheduler, {want} in the Z3 step")
    if _free_kv(monitor) != expected.free_kv:
        differences.append(f"{where}: free KV after the step is {_free_kv(monitor)} in the scheduler, "
                           f"{expected.free_kv} in the Z3 step")
    return differences


def step_bound(workload: Workload) -> int:
    """Steps within which the reference finishes `workload`: every busy step does at least one unit of
    work (PROGRESS), so the last arrival's step plus all the work, plus one."""
    last = max((a.arrival_step for a in workload.requests), default=0)
    return last + sum(a.prompt_len + a.max_new for a in workload.requests) + 1


def arrive(monitor: Monitor, arrivals: Sequence[Any], added: int, step: int) -> tuple[int, str | None]:
    """Add the `arrivals` (sorted by step) due by `step`, from index `added` on: (arrivals added so
    far, the rule the scheduler broke in an add, or None)."""
    while added < len(arrivals) and arrivals[added].arrival_step <= step:
        a = arrivals[added]
        added += 1
        try:
            monitor.add(a.rid, a.prompt_len, a.max_new)
        except RuleViolation as violation:
            return added, f"the scheduler broke {violation.rule}: {violation}"
    return added, None


def compare(workload: Workload, model: StepModel, factory: Callable[..., Any] = Scheduler,
            max_states: int | None = None) -> Iterator[str]:
    """Play `workload` (rid i is the i-th add) through `factory` under the monitor; before each step
    evaluate the Z3 step on the scheduler's state and yield every difference from what it then did.
    Stops after `max_states` steps compared (None: all), and reports a scheduler still busy after
    `step_bound(workload)` steps."""
    cfg = workload.config
    monitor = Monitor(factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens), cfg)
    arrivals = sorted(workload.requests, key=lambda a: a.arrival_step)
    added = 0
    bound = step_bound(workload)
    for step in range(bound):
        if max_states is not None and step >= max_states:
            return
        added, broken = arrive(monitor, arrivals, added, step)
        if broken is not None:
            yield f"step {step}: {broken}; workload: {workload.dumps()}"
            return
        if added == len(arrivals) and monitor.is_idle:
            return
        differences = step_differences(monitor, model, f"step {step}")
        if differences:
            yield from (f"{d}; workload: {workload.dumps()}" for d in differences)
            return
    if not monitor.is_idle:
        yield f"the scheduler is still busy after {bound} steps (the step bound) of {workload.dumps()}"
