"""The Z3 step evaluated on concrete states, and the reference's state read into the same shape:
what ties the theorems to stallfree's code. `compare` plays a workload through the reference and,
before every step, asks the Z3 transition what the step must plan, emit and leave behind; any
difference is reported. The reference is read only through its public views (waiting, running,
free_kv, progress), never its private fields."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import z3

from stallfree.reference import Phase, Scheduler
from stallfree.spec import Arrival, Config, Workload

from .policy import Policy, SymStep
from .symbolic import SymConfig, SymState, value


@dataclass(frozen=True, slots=True)
class Slot:
    """One request as both sides see it; `arrived` False pads the slots past the last arrival."""

    arrived: bool
    admitted: bool
    prompt_len: int
    max_new: int
    num_prefilled: int
    num_emitted: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a step did: the plan as (slot, n) in order, the slots that emitted, the state after."""

    plan: tuple[tuple[int, int], ...]
    emitted: frozenset[int]
    slots: tuple[Slot, ...]
    free_kv: int


EMPTY = Slot(False, False, 1, 1, 0, 0)


def read_reference(scheduler: Scheduler, num_slots: int, added: list[Arrival]) -> tuple[tuple[Slot, ...], int]:
    """The reference's state as slots (rid i is slot i), through its public views only. The
    reference keeps no record of a request that ended before the last step: such a slot is its
    arrival, run to the end (it finished by length: these workloads hold no stop or cancel)."""
    slots = []
    for a in added:
        try:
            p = scheduler.progress(a.rid)
        except KeyError:
            slots.append(Slot(True, True, a.prompt_len, a.max_new, a.prompt_len, a.max_new))
            continue
        admitted = p.phase not in (Phase.WAITING,)
        slots.append(Slot(True, admitted, p.prompt_len, p.max_new, p.num_prefilled, p.num_emitted))
    slots += [EMPTY] * (num_slots - len(added))
    return tuple(slots), scheduler.free_kv


class Evaluator:
    """The Z3 step for `num_slots` slots, built once, evaluated on any concrete state."""

    def __init__(self, num_slots: int, policy: Policy | None = None) -> None:
        self.config = SymConfig.fresh()
        self.state = SymState.fresh("c", num_slots, self.config)
        self.step: SymStep = (Policy() if policy is None else policy).step(self.state)

    def bind(self, config: Config, slots: tuple[Slot, ...], free_kv: int) -> list[z3.BoolRef]:
        c = self.config
        facts = [c.token_budget == config.token_budget, c.max_seqs == config.max_seqs,
                 c.kv_tokens == config.kv_tokens, self.state.free_kv == free_kv]
        for r, v in zip(self.state.requests, slots, strict=True):
            facts += [r.arrived == v.arrived, r.admitted == v.admitted, r.prompt_len == v.prompt_len,
                      r.max_new == v.max_new, r.num_prefilled == v.num_prefilled, r.num_emitted == v.num_emitted]
        return facts

    def evaluate(self, config: Config, slots: tuple[Slot, ...], free_kv: int) -> Outcome:
        solver = z3.Solver()
        solver.add(self.step.defs, *self.bind(config, slots, free_kv))
        if solver.check() != z3.sat:
            raise AssertionError("the Z3 step has no value on this state: its definitions contradict")
        model = solver.model()
        val = partial(value, model)
        plan = self.step.plan
        decodes = [(i, 1) for i, e in enumerate(plan) if val(e.decode)]
        chunks = [(i, int(val(e.chunk))) for i, e in enumerate(plan) if val(e.chunk) > 0]
        admits = [(i, int(val(e.first_chunk))) for i, e in enumerate(plan) if val(e.admit)]
        emitted = frozenset(i for i, flag in enumerate(self.step.emits) if val(flag))
        after = tuple(
            Slot(bool(val(r.arrived)), bool(val(r.admitted)), int(val(r.prompt_len)), int(val(r.max_new)),
                 int(val(r.num_prefilled)), int(val(r.num_emitted)))
            for r in self.step.after.requests
        )
        return Outcome(tuple(decodes + chunks + admits), emitted, after, int(val(self.step.after.free_kv)))


def compare(workload: Workload, evaluator: Evaluator) -> Iterator[str]:
    """Play `workload` (rid i is the i-th add, all accepted) through the reference; before each step
    evaluate the Z3 step on the reference's state and yield every difference from what the reference
    then did. Yields nothing when model and code agree on every step."""
    cfg = workload.config
    num_slots = len(evaluator.state.requests)
    scheduler = Scheduler(cfg.token_budget, cfg.max_seqs, cfg.kv_tokens)
    arrivals = sorted(workload.requests, key=lambda a: a.arrival_step)
    added = 0
    step = 0
    while added < len(arrivals) or not scheduler.is_idle:
        while added < len(arrivals) and arrivals[added].arrival_step <= step:
            a = arrivals[added]
            scheduler.add(a.rid, a.prompt_len, a.max_new)
            added += 1
        slots, free_kv = read_reference(scheduler, num_slots, arrivals[:added])
        expected = evaluator.evaluate(cfg, slots, free_kv)
        plan = scheduler.schedule()
        emitted = scheduler.complete(plan)
        after, free_after = read_reference(scheduler, num_slots, arrivals[:added])
        got = Outcome(tuple((rid, n) for rid, n in plan), frozenset(emitted), after, free_after)
        where = f"step {step} of {workload.dumps()}"
        if got.plan != expected.plan:
            yield f"{where}: the reference planned {list(got.plan)}, the Z3 step {list(expected.plan)}"
        if got.emitted != expected.emitted or len(emitted) != len(got.emitted):
            yield f"{where}: the reference emitted {sorted(emitted)}, the Z3 step {sorted(expected.emitted)}"
        for i, (g, e) in enumerate(zip(got.slots, expected.slots, strict=True)):
            if g != e:
                yield f"{where}: slot {i} after the step is {g} in the reference, {e} in the Z3 step"
        if got.free_kv != expected.free_kv:
            yield f"{where}: free KV after the step is {got.free_kv} in the reference, {expected.free_kv} in Z3"
        step += 1


def random_workload(rng: random.Random, num_slots: int) -> Workload:
    """A small workload whose requests all fit: the sizes where the policy's branches all occur."""
    budget, max_seqs = rng.randint(1, 8), rng.randint(1, 4)
    sizes = [(rng.randint(1, 12), rng.randint(1, 5)) for _ in range(rng.randint(1, num_slots))]
    kv = rng.randint(max(p + m for p, m in sizes), sum(p + m for p, m in sizes) + 1)
    steps = sorted(rng.randint(0, 6) for _ in sizes)
    return Workload(Config(budget, max_seqs, kv), tuple(Arrival(i, p, m, s) for i, ((p, m), s)
                                                       in enumerate(zip(sizes, steps, strict=True))))
