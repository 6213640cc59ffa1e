"""Liveness as users mean it: every request finishes within a bound computed from the work ahead of
it when it arrived, under arrivals that never stop. Model-checked on the state graph with the add
bound replaced by a bound on the waiting queue, so behaviours are infinite (the graph has cycles
through adds: lassos).

**Fairness.** As a TLA+ spec would state it: Next = Step \\/ Add, and the behaviour is
Init /\\ [][Next]_vars /\\ WF_vars(Step): Step stays enabled (the executor keeps stepping), so it
is taken infinitely often; Add (an arrival) is unconstrained. The bound counts Steps only, so any
number of arrivals may come between two of them.

**The bound.** A request r arriving when the accepted, unfinished requests hold W units of work
(prompt positions to run plus tokens to emit), itself holding w, finishes within W + w steps. The
ranking function is V_r: the remaining work of r and of the requests ahead of it at its arrival; it
never grows (arrivals after r add nothing to it) and falls by at least one each step until r
finishes (the Z3 theorem LIVENESS proves this of one step for any state the invariant allows).

**The check.** The environment may, at any add, choose that request as the watched one (if none is
watched): its deadline W + w is set, and each step lowers it. A watched request still unfinished
when its deadline reaches 0 is a counterexample: a finite prefix of a behaviour in which it starved
(no continuation can rescue it: the bound is broken). Keys leave out the count of adds and include
the watched request's place and deadline, so the graph is finite and its cycles are lassos of
never-ending arrivals. The rules themselves are the model checker's business; here the monitor
judges none, only follows the shadow, so a starving scheduler is caught by this check alone.
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
from .snapshot import fork

LIVENESS = "LIVENESS"

Action = tuple[int, int] | None  # an add of (prompt_len, max_new), or None: a step
Watch = tuple[int, int] | None  # (rid, steps left before its deadline)


@dataclass(frozen=True, slots=True)
class StarvationResult:
    bounds: Bounds
    states: int
    seconds: float
    complete: bool
    worst_margin: int | None  # the fewest steps any watched request had left when it finished
    counterexample: Counterexample | None

    @property
    def holds(self) -> bool:
        return self.complete and self.counterexample is None


def _work(monitor: Monitor) -> int:
    s = monitor.shadow
    waiting = sum(t.request.prompt_len + t.request.max_new for t in s.waiting)
    running = sum(t.request.prompt_len - t.num_prefilled + t.request.max_new - t.num_emitted
                  for t in s.running.values())
    return waiting + running


def _key(monitor: Monitor, watch: Watch) -> Hashable:
    s = monitor.shadow
    tracks = [*s.waiting, *s.running.values()]
    place = None if watch is None else next(i for i, t in enumerate(tracks) if t.rid == watch[0])
    return (tuple((t.request.prompt_len, t.request.max_new) for t in s.waiting),
            tuple((t.request.prompt_len, t.request.max_new, t.num_prefilled, t.num_emitted)
                  for t in s.running.values()),
            place, None if watch is None else watch[1])


def check(bounds: Bounds, factory: Callable[..., Any] = Scheduler, max_states: int | None = None) -> StarvationResult:
    """Bounded response under never-ending arrivals: `bounds.num_requests` is the most requests that
    may wait at once (arrivals pause while the queue is that long), not a bound on arrivals."""
    began = time.perf_counter()
    cfg = bounds.config
    shapes = [shape for shape in bounds.universe() if shape[0] + shape[1] <= cfg.kv_tokens]
    root = Monitor(factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens), cfg, ())
    seen: dict[Hashable, list[Action]] = {_key(root, None): []}
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
                            message = (f"request {rid} is unfinished when its bound (the work ahead of it at its "
                                       f"arrival plus its own) has run out")
                            return StarvationResult(bounds, len(seen), time.perf_counter() - began, True, worst,
                                                    build(cfg, [*path, None], LIVENESS, message, factory, ()))
                        else:
                            child_watch = (rid, left - 1)
                else:
                    rid = child.num_adds
                    ahead = _work(child)
                    child.add(rid, *action)
                    if watched:
                        child_watch = (rid, ahead + action[0] + action[1])
                key = _key(child, child_watch)
                if key not in seen:
                    seen[key] = [*path, action]
                    next_frontier.append((child, child_watch, seen[key]))
                    if max_states is not None and len(seen) > max_states:
                        return StarvationResult(bounds, len(seen), time.perf_counter() - began, False, worst, None)
        frontier = next_frontier
    return StarvationResult(bounds, len(seen), time.perf_counter() - began, True, worst, None)
