"""Liveness as users mean it: every request finishes within a bound computed from the work ahead of
it when it arrived, under arrivals that never stop. Model-checked on the state graph with the add
bound replaced by a bound on the waiting queue, so behaviours are infinite (the graph has cycles
through adds: lassos).

**Fairness.** As a TLA+ spec would state it: Next = Step \\/ Add, and the behaviour is
Init /\\ [][Next]_vars /\\ WF_vars(Step): Step stays enabled (the executor keeps stepping), so it
is taken infinitely often; Add (an arrival) is unconstrained. The bound counts Steps only, so any
number of arrivals may come between two of them.

**The bound, in steps.** A request r arriving when it and the accepted, unfinished requests ahead of
it hold P prompt positions to run and D tokens to emit finishes within floor(P / B) + D steps. The
ranking function is R_r = P_r + B * D_r over r and the requests ahead of it: it never grows (arrivals
after r add nothing to it) and falls by at least B each step until r finishes (the Z3 theorem
LIVENESS-STEPS proves this of one step for any state the invariant allows, after any adds). The
weaker bound W + w (units of work, LIVENESS) follows from it; this one is tight enough that a
scheduler idling one step in three, or running one prefill token a step, breaks it.

**The check.** The environment may, at any add, choose that request as the watched one (if none is
watched): its deadline W + w is set, and each step lowers it. A watched request still unfinished
when its deadline reaches 0 is a counterexample: a finite prefix of a behaviour in which it starved
(no continuation can rescue it: the bound is broken). Keys leave out the count of adds and include
the watched request's place and deadline, so the graph is finite and its cycles are lassos of
never-ending arrivals. A scheduler's hidden state (`hidden`, as in `modelcheck`) is part of the key,
so states that differ in it are not merged. The rules themselves are the model checker's business;
here the monitor judges none, only follows the shadow, so a starving scheduler is caught by this
check alone.

**The cap on waiting requests.** Arrivals pause while `num_requests` wait, to keep the graph finite.
For the reference the cap loses nothing the bound depends on: R_r counts only r and the requests
ahead of it, and LIVENESS-STEPS holds after any adds (any number of arrivals between two steps, at
N = 12), so no longer queue behind r can delay it. For another scheduler, one that decides on the
queue's length beyond the cap, the check is only as complete as the cap: said in docs/proofs.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from stallfree.reference import Scheduler
from stallfree.spec import Monitor

from .bounds import Bounds
from .counterexample import Counterexample, build
from .modelcheck import Tally
from .snapshot import Hidden, fork

LIVENESS = "LIVENESS"

Action = tuple[int, int] | None  # an add of (prompt_len, max_new), or None: a step
Watch = tuple[int, int] | None  # (rid, steps left before its deadline)


@dataclass(frozen=True, slots=True)
class StarvationResult(Tally):
    bounds: Bounds
    states: int
    seconds: float
    complete: bool
    worst_margin: int | None  # the fewest steps any watched request had left when it finished
    counterexample: Counterexample | None


def ahead(monitor: Monitor) -> tuple[int, int]:
    """(P, D): the prompt positions left to run and the tokens left to emit of every accepted,
    unfinished request."""
    s = monitor.shadow
    prompts = sum(t.request.prompt_len for t in s.waiting)
    prompts += sum(t.request.prompt_len - t.num_prefilled for t in s.running.values())
    tokens = sum(t.request.max_new for t in s.waiting) + sum(t.request.max_new - t.num_emitted
                                                             for t in s.running.values())
    return prompts, tokens


def deadline(monitor: Monitor, prompt_len: int, max_new: int) -> int:
    """The steps within which a request of these lengths, arriving now, must finish: floor(P / B) + D
    over it and the requests ahead of it (`liveness_steps.bound`, repeated here: no z3 needed)."""
    prompts, tokens = ahead(monitor)
    return (prompts + prompt_len) // monitor.shadow.config.token_budget + tokens + max_new


def _key(monitor: Monitor, watch: Watch, hidden: Hidden | None) -> Hashable:
    s = monitor.shadow
    tracks = [*s.waiting, *s.running.values()]
    place = None if watch is None else next(i for i, t in enumerate(tracks) if t.rid == watch[0])
    return (tuple((t.request.prompt_len, t.request.max_new) for t in s.waiting),
            tuple((t.request.prompt_len, t.request.max_new, t.num_prefilled, t.num_emitted)
                  for t in s.running.values()),
            place, None if watch is None else watch[1], None if hidden is None else hidden(monitor.scheduler))


def check(bounds: Bounds, factory: Callable[..., Any] = Scheduler, max_states: int | None = None,
          hidden: Hidden | None = None) -> StarvationResult:
    """Bounded response under never-ending arrivals: `bounds.num_requests` is the most requests that
    may wait at once (arrivals pause while the queue is that long), not a bound on arrivals. `hidden`
    gives the scheduler's state the key would leave out (a step counter), kept in the key."""
    began = time.perf_counter()
    cfg = bounds.config
    shapes = [shape for shape in bounds.universe() if shape[0] + shape[1] <= cfg.kv_tokens]
    root = Monitor(factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens), cfg, ())
    seen: dict[Hashable, list[Action]] = {_key(root, None, hidden): []}
    frontier: list[tuple[Monitor, Watch, list[Action]]] = [(root, None, [])]
    worst: int | None = None
    while frontier:
        next_frontier = []
        for monitor, watch, path in frontier:
            moves: list[tuple[Action, bool]] = [(None, False)]
            if len(monitor.shadow.waiting) < bounds.num_requests:
                moves += [(shape, False) for shape in shapes]
                if watch is None:
                    moves += [(shape, True) for shape in shapes]
            for action, watched in moves:
                child, child_watch = fork(monitor), watch
                if action is None:
                    child.step()
                    if child_watch is not None:
                        rid, left = child_watch
                        if rid not in child.shadow.tracks:  # finished
                            worst = left - 1 if worst is None else min(worst, left - 1)
                            child_watch = None
                        elif left - 1 <= 0:
                            message = (f"request {rid} is unfinished when its bound, floor(P / B) + D steps (P prompt "
                                       f"positions and D tokens of it and the requests ahead at its arrival), "
                                       f"has run out")
                            return StarvationResult(bounds, len(seen), time.perf_counter() - began, True, worst,
                                                    build(cfg, [*path, None], LIVENESS, message, factory, ()))
                        else:
                            child_watch = (rid, left - 1)
                else:
                    rid = child.num_adds
                    due = deadline(child, *action)
                    child.add(rid, *action)
                    if watched:
                        child_watch = (rid, due)
                key = _key(child, child_watch, hidden)
                if key not in seen:
                    seen[key] = [*path, action]
                    next_frontier.append((child, child_watch, seen[key]))
                    if max_states is not None and len(seen) > max_states:
                        return StarvationResult(bounds, len(seen), time.perf_counter() - began, False, worst, None)
        frontier = next_frontier
    return StarvationResult(bounds, len(seen), time.perf_counter() - began, True, worst, None)
