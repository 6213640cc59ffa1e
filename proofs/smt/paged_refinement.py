"""Refinement for the paged design: the symbolic paged step (`paged_step.PagedPolicy`), as its
theorems state it, is what `stallfree.paged`'s code does, on states of random workloads.

Each state is read through the scheduler's own views (`running`, `waiting`, `progress(rid)`,
`free_blocks`): request index i is the i-th of the running requests (admission order) then the
waiting ones (line order), which the paged design keeps in arrival order. The Z3 step is evaluated
on it by Z3 itself (block size the scheduler's); the code then runs `schedule()` and `complete()`;
the plan (decodes, chunks, admissions), the preempted requests, the emitted ones, every request's
phase, tokens in KV, emitted tokens and blocks, and the free blocks after the step must agree.

Ends are sampled too (`Ends`): some requests are cancelled before `schedule()`, some while the plan
is pending, and some of those that emit are named as stopped to `complete()`; the Z3 side applies its
own cancel (`PagedPolicy.cancel`) before the step and, for the pending ones, after it, and its stops
inside the step. A stop the code refuses is a difference too.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from stallfree.paged import small_blocks
from stallfree.spec.errors import ProtocolError
from stallfree.spec.verdict import Verdict
from stallfree.testing.generate import Ranges, random_workload

from .paged_step import PagedPolicy, PagedState
from .symbolic import check, value

SHAPE = Ranges(max_budget=6, max_seqs=4, max_prompt=3, max_new=8, max_requests=6, max_gap=1, never_fit_share=0.0)
PER_WORKLOAD = 60
CANCEL_SHARE = 0.03  # each live request, each step: cancelled before schedule(), and again while the plan is pending
STOP_SHARE = 0.1  # each request that emits in a step: named as stopped


@dataclass(frozen=True, slots=True)
class PagedDifferentialResult:
    states: int
    preempting: int  # states whose step preempted
    workloads: int
    cancels: int  # requests cancelled (before schedule() or while the plan was pending)
    stops: int  # requests named as stopped
    seconds: float
    difference: str | None

    @property
    def verdict(self) -> Verdict:
        return Verdict.HOLDS if self.difference is None else Verdict.BROKEN


View = tuple[bool, bool, int, int, int, int, int, int]  # arrived, running, p, m, computed, emitted, target, held


def read(scheduler: Any, arrival: list[int]) -> tuple[list[int], list[View]]:
    """The live requests in arrival order (`arrival`: the rids accepted, in order), as the Z3 state."""
    live = {r.rid for r in scheduler.running} | {r.rid for r in scheduler.waiting}
    rids = [rid for rid in arrival if rid in live]
    views = []
    for rid in rids:
        g = scheduler.progress(rid)
        running = g.phase.value in ("partial", "ready")
        target = g.num_computed if g.phase.value == "ready" else g.prompt_len + g.num_emitted
        views.append((True, running, g.prompt_len, g.max_new, g.num_computed, g.num_emitted, target, g.num_blocks))
    return rids, views


@dataclass(frozen=True, slots=True)
class Ends:
    """The ends a compared step samples, by request index: cancels before `schedule()`, stops named to
    `complete()` (`stop_mask`: a request is named where the mask is set and it emitted), and cancels
    while the plan is pending (where the mask is set and it is still live after the step)."""

    cancel: frozenset[int] = frozenset()
    stop_mask: frozenset[int] = frozenset()
    late_mask: frozenset[int] = frozenset()

    @classmethod
    def sampled(cls, rng: random.Random, n: int) -> Ends:
        def some(share: float) -> frozenset[int]:
            return frozenset(i for i in range(n) if rng.random() < share)
        return cls(some(CANCEL_SHARE), some(STOP_SHARE), some(CANCEL_SHARE))


def evaluate(policy: PagedPolicy, scheduler: Any, views: list[View], ends: Ends = Ends()) -> dict[str, Any]:
    """The Z3 paged step's value on the state `views` of `scheduler`'s config and pool: the cancels
    (`policy.cancel`), the step with its stops, then the pending cancels (`policy.cancel` again, on the
    state after the step)."""
    n = max(len(views), 1)
    s = PagedState.fresh("k", n, scheduler.block_size)
    w = policy.cancel(s, "k.cancel")
    t = policy.step(w.after)
    late = policy.cancel(t.after, "k.late")
    solver = z3.Solver()
    cfg = scheduler.config
    solver.add(w.facts, t.facts, late.facts, s.token_budget == cfg.token_budget, s.max_seqs == cfg.max_seqs,
               s.num_blocks == scheduler.num_blocks, s.watermark == scheduler.watermark,
               s.free == scheduler.free_blocks)
    padded = views + [(False, False, 1, 1, 0, 0, 1, 0)] * (n - len(views))
    for i, (r, v) in enumerate(zip(s.requests, padded, strict=True)):
        solver.add(r.arrived == v[0], r.running == v[1], z3.Not(r.ended_early), r.prompt_len == v[2],
                   r.max_new == v[3], r.computed == v[4], r.emitted == v[5], r.target == v[6], r.held == v[7])
        solver.add(w.cancels[i] == (i in ends.cancel), t.stops[i] == z3.And(i in ends.stop_mask, t.emits[i]),
                   late.cancels[i] == z3.And(i in ends.late_mask, t.after.requests[i].live))
    if check(solver) != z3.sat:
        raise AssertionError("the Z3 paged step has no value on this state")
    m = solver.model()
    out: dict[str, Any] = {"free": value(m, late.after.free), "requests": [], "cancel": set(ends.cancel),
                           "stops": {i for i in range(len(views)) if value(m, t.stops[i])},
                           "late": {i for i in range(len(views)) if value(m, late.cancels[i])}}
    for i in range(len(views)):
        a = late.after.requests[i]
        n_i = value(m, t.chunk[i]) + value(m, t.first_chunk[i]) + (1 if value(m, t.decode[i]) else 0)
        out["requests"].append({
            "preempted": value(m, t.preempted[i]), "n": n_i, "admitted": value(m, t.admit[i]),
            "emitted_now": value(m, t.emits[i]), "live": value(m, a.live), "running": value(m, a.running),
            "computed": value(m, a.computed), "emitted": value(m, a.emitted), "held": value(m, a.held),
            "target": value(m, a.target) if value(m, z3.Or(a.waiting, a.partial)) else None})
    return out


def run_step(scheduler: Any, rids: list[int], want: dict[str, Any]) -> tuple[Any, set[int], str | None]:
    """The code's step with the ends the Z3 step took: cancels, schedule(), pending cancels, complete() with
    the stops. (plan, emitted rids, the code's refusal of an end, or None)."""
    for i in sorted(want["cancel"]):
        scheduler.cancel(rids[i])
    plan = scheduler.schedule()
    try:
        for i in sorted(want["late"]):
            scheduler.cancel(rids[i])
        return plan, set(scheduler.complete(plan, [rids[i] for i in sorted(want["stops"])])), None
    except (KeyError, ValueError, ProtocolError) as error:  # an end the Z3 step took where the code cannot
        return plan, set(), (f"the code refused the stops {sorted(want['stops'])} or the pending cancels "
                             f"{sorted(want['late'])}: {error}")


def shown(scheduler: Any, rid: int, before: View, cancelled: bool) -> dict[str, Any]:
    """Request `rid` after the step, as the Z3 state reads it (`before`: its view before the step)."""
    if cancelled:  # cancelled before the step: no record is kept after the next complete()
        return {"live": False, "running": False, "computed": 0, "emitted": before[5], "held": 0, "target": None}
    g = scheduler.progress(rid)  # a request that ended on this step reports how it ended
    if g.phase.value in ("waiting", "partial", "ready"):
        waits_or_prefills = g.phase.value in ("waiting", "partial")
        return {"live": True, "running": g.phase.value in ("partial", "ready"), "computed": g.num_computed,
                "emitted": g.num_emitted, "held": g.num_blocks,
                "target": g.prompt_len + g.num_emitted if waits_or_prefills else None}
    return {"live": False, "running": False, "computed": 0, "emitted": g.num_emitted, "held": 0, "target": None}


def step_difference(policy: PagedPolicy, scheduler: Any, arrival: list[int],
                    rng: random.Random | None = None) -> tuple[str | None, bool, Ends]:
    """(the first difference between the Z3 paged step and the code's step, or None; whether it preempted;
    the ends sampled, with `rng`, none without)."""
    rids, views = read(scheduler, arrival)
    ends = Ends() if rng is None else Ends.sampled(rng, len(views))
    want = evaluate(policy, scheduler, views, ends)
    plan, emitted, refused = run_step(scheduler, rids, want)
    taken = Ends(frozenset(want["cancel"]), frozenset(want["stops"]), frozenset(want["late"]))
    if refused is not None:
        return f"{refused}; state before {views}", bool(plan.preempted), taken
    given = dict(plan.entries)
    preempted = set(plan.preempted)
    for i, rid in enumerate(rids):
        w = want["requests"][i]
        got = shown(scheduler, rid, views[i], i in want["cancel"])
        got |= {"preempted": rid in preempted, "n": given.get(rid, 0), "emitted_now": rid in emitted,
                "admitted": not views[i][1] and rid in given}
        for key, expected in w.items():
            if got[key] != expected:
                return (f"request index {i} (rid {rid}): {key} is {got[key]} in the code, {expected} in the Z3 "
                        f"paged step; state before {views}, cancelled {sorted(want['cancel'])}, stopped "
                        f"{sorted(want['stops'])}, cancelled while pending {sorted(want['late'])}, plan "
                        f"{list(plan.entries)}, preempted {sorted(preempted)}", bool(preempted), taken)
    if scheduler.free_blocks != want["free"]:
        return (f"free blocks after the step: {scheduler.free_blocks} in the code, {want['free']} in the Z3 "
                f"paged step; state before {views}", bool(preempted), taken)
    return None, bool(preempted), taken


def on_random_states(count: int, factory: Callable[..., Any] = small_blocks, policy: PagedPolicy | None = None,
                     seed: int = 16) -> PagedDifferentialResult:
    """Compare the Z3 paged step with `factory` before every step of random workloads, `count` states,
    with cancels and stops sampled (`Ends.sampled`, from a generator of their own)."""
    policy = PagedPolicy() if policy is None else policy
    began = time.perf_counter()
    rng, ends_rng = random.Random(seed), random.Random(seed + 1)
    states = preempting = workloads = cancels = stops = 0
    while states < count:
        workload = random_workload(rng, SHAPE)
        workloads += 1
        cfg = workload.config
        arrivals = sorted(workload.requests, key=lambda a: a.arrival_step)
        # a scarce pool, so that decodes outgrow it and the step preempts
        kv = max(a.prompt_len + a.max_new for a in arrivals) + rng.randint(0, 3)
        scheduler = factory(token_budget=max(cfg.token_budget, 2), max_seqs=max(cfg.max_seqs, 2), kv_tokens=kv)
        arrival: list[int] = []
        bound = sum(a.prompt_len + a.max_new + 1 for a in arrivals) * 2 + arrivals[-1].arrival_step + 1
        for step in range(min(bound, PER_WORKLOAD)):
            for a in [a for a in arrivals if a.arrival_step == step]:
                try:
                    scheduler.add(a.rid, a.prompt_len, a.max_new)
                    arrival.append(a.rid)
                except ValueError:  # NEVER-FIT refuses it: it never arrives in the Z3 state either
                    pass
            if scheduler.is_idle and step > arrivals[-1].arrival_step:
                break
            difference, preempted, ends = step_difference(policy, scheduler, arrival, ends_rng)
            states += 1
            preempting += preempted
            cancels += len(ends.cancel) + len(ends.late_mask)
            stops += len(ends.stop_mask)
            if difference is not None:
                found = f"{difference}; workload: {workload.dumps()}"
                return PagedDifferentialResult(states, preempting, workloads, cancels, stops,
                                               time.perf_counter() - began, found)
    return PagedDifferentialResult(states, preempting, workloads, cancels, stops, time.perf_counter() - began, None)
