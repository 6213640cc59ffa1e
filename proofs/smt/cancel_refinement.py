"""Refinement for cancels: the Z3 cancel step (`cancels.CancelStep`), as the cancel theorems state
it, is what the code's `cancel(rid)` does.

Random workloads are played through the scheduler under the monitor; before some steps a waiting or
running request, chosen at random, is cancelled. Just before, the state is read as the Z3 state
(`concrete.read`: running requests in admission order, then waiting ones in arrival order), the Z3
cancel step is evaluated on it by Z3 itself, and after the cancel the state is read again: every
request's index, lengths and progress and the free KV must be what the Z3 step gives. A cancel the
code refuses, or a rule the monitor finds broken, is a difference too.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from stallfree.reference import Scheduler
from stallfree.spec import Monitor, RuleViolation
from stallfree.spec.verdict import Verdict
from stallfree.testing.generate import Ranges, random_workload

from .cancels import CancelStep
from .concrete import EMPTY, RequestView, arrive, read, step_bound
from .symbolic import SymConfig, SymState, check, value

SHAPE = Ranges(max_budget=8, max_seqs=4, max_prompt=10, max_new=5, max_requests=8, never_fit_share=0.0)
CANCEL_SHARE = 0.3  # of the steps before which a request is cancelled


@dataclass(frozen=True, slots=True)
class CancelOutcome:
    """What the comparison found: cancels compared, workloads played, the first difference or None."""

    cancels: int
    workloads: int
    seconds: float
    difference: str | None

    @property
    def verdict(self) -> Verdict:
        return Verdict.HOLDS if self.difference is None else Verdict.BROKEN


def evaluate(cancel: CancelStep, config: Any, views: tuple[RequestView, ...], free_kv: int,
             c: int) -> tuple[tuple[RequestView, ...], int]:
    """The Z3 cancel step's value on a concrete state: the requests by index and the free KV after."""
    sym = SymState.fresh("k", len(views), SymConfig.fresh())
    solver = z3.Solver()
    cfg = sym.config
    solver.add(cfg.token_budget == config.token_budget, cfg.max_seqs == config.max_seqs,
               cfg.kv_tokens == config.kv_tokens, sym.free_kv == free_kv)
    for r, v in zip(sym.requests, views, strict=True):
        solver.add(r.arrived == v.arrived, r.admitted == v.admitted, r.prompt_len == v.prompt_len,
                   r.max_new == v.max_new, r.num_prefilled == v.num_prefilled, r.num_emitted == v.num_emitted)
    for case in cancel.cases(sym, c):  # the one case whose guard the state meets
        after = cancel.apply(sym, case, "kx")
        solver.push()
        solver.add(case.guard, after.facts)
        if check(solver) == z3.sat:
            break
        solver.pop()
    else:
        raise AssertionError("the Z3 cancel step has no value on this state")
    model = solver.model()
    requests = tuple(
        EMPTY if not value(model, r.arrived) else
        RequestView(True, value(model, r.admitted), value(model, r.prompt_len), value(model, r.max_new),
                    value(model, r.num_prefilled), value(model, r.num_emitted))
        for r in after.state.requests)
    return requests, value(model, after.state.free_kv)


def cancel_differences(monitor: Monitor, rng: random.Random, cancel: CancelStep) -> str | None:
    """Cancel a random waiting or running request of `monitor`'s state; the first difference from the
    Z3 cancel step, or None."""
    rids, views, free_kv = read(monitor)
    if not rids:
        return None
    c = rng.randrange(len(rids))
    expected, expected_free = evaluate(cancel, monitor.config, views, free_kv, c)
    try:
        accepted = monitor.cancel(rids[c])
    except RuleViolation as violation:
        return f"cancel of rid {rids[c]}: the scheduler broke {violation.rule}: {violation}"
    if not accepted:
        return f"cancel of rid {rids[c]} ({'running' if views[c].admitted else 'waiting'}) was refused"
    _, got, got_free = read(monitor)
    got = got + (EMPTY,) * (len(expected) - len(got))
    if got != expected or got_free != expected_free:
        return (f"cancel of request index {c} (rid {rids[c]}) in {list(views)}, free KV {free_kv}: the scheduler "
                f"left {list(got)}, free KV {got_free}; the Z3 cancel step {list(expected)}, free KV {expected_free}")
    return None


def on_random_cancels(count: int, factory: Callable[..., Any] = Scheduler, cancel: CancelStep | None = None,
                      seed: int = 12) -> CancelOutcome:
    """Compare the Z3 cancel step with `factory`'s cancel on at least `count` cancels of random workloads."""
    cancel = CancelStep() if cancel is None else cancel
    began = time.perf_counter()
    rng = random.Random(seed)
    cancels = workloads = 0
    while cancels < count:
        workload = random_workload(rng, SHAPE)
        workloads += 1
        cfg = workload.config
        monitor = Monitor(factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens), cfg)
        arrivals = sorted(workload.requests, key=lambda a: a.arrival_step)
        added = 0
        for step in range(step_bound(workload)):
            added, broken = arrive(monitor, arrivals, added, step)
            if broken is not None:
                return CancelOutcome(cancels, workloads, time.perf_counter() - began, broken)
            if rng.random() < CANCEL_SHARE and not monitor.is_idle:
                cancels += 1
                difference = cancel_differences(monitor, rng, cancel)
                if difference is not None:
                    return CancelOutcome(cancels, workloads, time.perf_counter() - began,
                                         f"{difference}; workload: {workload.dumps()}")
            if added == len(arrivals) and monitor.is_idle:
                break
            try:
                monitor.step()
            except RuleViolation as violation:
                return CancelOutcome(cancels, workloads, time.perf_counter() - began,
                                     f"the scheduler broke {violation.rule}: {violation}; workload: {workload.dumps()}")
    return CancelOutcome(cancels, workloads, time.perf_counter() - began, None)
