"""The model checker over the paged design: the same breadth-first search (`modelcheck._Explorer`),
run on a paged scheduler under the paged monitor, each state judged by the paged invariants.

The environment's actions: a step; a step in which the first request to emit stops on its token;
a cancel of the newest live request, and one of the oldest; an add of any shape of the universe
(plus one whose peak exceeds the pool: NEVER-FIT). Stops and cancels are bounded by `events` per
behaviour, adds by the bound's `num_requests`. The key is the paged shadow's: per request its
prompt, max_new, emitted tokens, whether it was ever preempted, and (running) its KV and prefill;
and what the scheduler shows of its line and pool (`shown`), so that a scheduler whose order has
drifted from the contract's is not merged with one that has not.

Liveness: no cycle of steps with work pending (the graph's livelock check) and the termination
bound of PREEMPT-BOUND: from any state, once arrivals stop, every request is done within
sum(prompt_len + max_new + 1) steps over the live requests, recompute included (`over_rank`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from stallfree.paged import small_blocks
from stallfree.spec import PROTOCOL, RuleViolation
from stallfree.spec.paged_invariants import broken
from stallfree.spec.paged_monitor import PagedMonitor

from .bounds import Bounds
from .counterexample import Counterexample, workload_of
from .graph import STEP, Graph, analyse
from .snapshot import fork

STOP = "stop"  # a step in which the first emitter's token ends it
CANCEL_NEWEST = "cancel newest"
CANCEL_OLDEST = "cancel oldest"
PagedAction = tuple[int, int] | str | None


@dataclass(frozen=True, slots=True)
class PagedResult:
    bounds: Bounds
    states: int
    transitions: int
    depth: int
    seconds: float
    complete: bool
    longest_steps: int | None
    drain_bound: int | None
    max_preemptions: int  # the most times one request was preempted, over the states explored
    preempting_states: int  # states reached by a step that preempted
    running_states: int  # states with a request running: 0 means every add was refused (a vacuous check)
    counterexample: Counterexample | None

    @property
    def holds(self) -> bool:
        return self.complete and self.counterexample is None


def key(m: PagedMonitor, adds: int, events: int) -> Hashable:
    s = m.shadow
    waiting = tuple((t.request.prompt_len, t.request.max_new, t.num_emitted, t.num_preemptions > 0) for t in s.waiting)
    running = tuple((t.request.prompt_len, t.request.max_new, t.num_emitted, t.num_preemptions > 0, t.num_computed,
                     t.target) for t in s.running.values())
    return (adds, events, waiting, running, shown(m))


def shown(m: PagedMonitor) -> Hashable:
    """What the scheduler shows of its line and its pool, by position in the shadow's line: a scheduler
    whose own order or count has drifted from the contract's is a different state, not a merged one."""
    s = m.shadow
    position = {rid: i for i, rid in enumerate([*s.running, *(t.rid for t in s.waiting)])}
    views = []
    for name in ("running", "waiting"):
        view = getattr(m.scheduler, name, ())
        views.append(tuple(position.get(getattr(r, "rid", None), -1) for r in view))
    return (*views, getattr(m.scheduler, "free_blocks", None))


def bound_work(m: PagedMonitor) -> int:
    """The termination bound's steps for the live requests: sum(prompt_len + max_new + 1)."""
    s = m.shadow
    return sum(t.request.prompt_len + t.request.max_new + 1 for t in [*s.waiting, *s.running.values()])


class _PagedExplorer:
    def __init__(self, bounds: Bounds, factory: Callable[..., Any], events: int) -> None:
        self.bounds = bounds
        self.factory = factory
        self.events = events
        shapes = [(p, q) for p in range(1, bounds.max_prompt + 1) for q in range(1, bounds.max_new + 1)]
        if bounds.never_fit:
            shapes.append((bounds.kv_tokens + 1, 1))  # its peak exceeds the whole pool: add() must refuse it
        self.actions: tuple[PagedAction, ...] = (None, STOP, CANCEL_NEWEST, CANCEL_OLDEST, *shapes)
        self.graph = Graph(len(self.actions))
        self.index: dict[Hashable, int] = {}
        self.transitions = 0
        self.max_preemptions = 0
        self.preempting = 0
        self.running = 0

    def root(self) -> tuple[PagedMonitor, tuple[int, int]]:
        cfg = self.bounds.config
        scheduler = self.factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
        m = PagedMonitor(scheduler, cfg)
        self.index[key(m, 0, 0)] = self.graph.add_state(-1, STEP, True, 0)
        return m, (0, 0)

    def enabled(self, m: PagedMonitor, adds: int, events: int) -> list[int]:
        indexes = [0]
        live = m.shadow.tracks
        if events < self.events:
            if not m.shadow.is_idle:
                indexes.append(1)
            if live:
                indexes += [2, 3]
        if adds < self.bounds.num_requests:
            indexes += range(4, len(self.actions))
        return indexes

    def act(self, m: PagedMonitor, action: PagedAction) -> None:
        if action is None:
            m.step()
        elif action == STOP:
            m.plan()
            m.complete(m.due()[:1])
        elif isinstance(action, str):
            s = m.shadow
            order = [*s.running, *(t.rid for t in s.waiting)]
            m.cancel(order[-1] if action == CANCEL_NEWEST else order[0])
        else:
            m.add(m.num_adds, action[0], action[1])

    def expand(self, state: int, node: PagedMonitor, counts: tuple[int, int], frontier: list) -> Counterexample | None:
        adds, events = counts
        indexes = self.enabled(node, adds, events)
        base = state * len(self.actions)
        for i, index in enumerate(indexes):
            action = self.actions[index]
            m = node if i == len(indexes) - 1 else fork(node)
            self.transitions += 1
            preempted_before = m.shadow.num_preemptions
            try:
                self.act(m, action)
            except RuleViolation as violation:
                return self.fail(state, index, violation.rule, violation.message)
            except Exception as error:
                return self.fail(state, index, PROTOCOL, f"{type(error).__name__}: {error}")
            found = broken(m.shadow, m.scheduler)
            if found is not None:
                return self.fail(state, index, *found)
            child_counts = (adds + (index >= 4), events + (index in (1, 2, 3)))
            child_key = key(m, *child_counts)
            child = self.index.get(child_key)
            if child is None:
                child = self.graph.add_state(state, index, m.shadow.is_idle, bound_work(m))
                self.index[child_key] = child
                frontier.append((child, m, child_counts))
                self.max_preemptions = max(self.max_preemptions, m.shadow.max_preemptions)
                self.preempting += m.shadow.num_preemptions > preempted_before
                self.running += bool(m.shadow.running)
            self.graph.succ[base + index] = child
        return None

    def fail(self, state: int, index: int, rule: str, message: str) -> Counterexample:
        path = [self.actions[s] for s in self.graph.path_to(state)] + [self.actions[index]]
        plain = all(a is None or isinstance(a, tuple) for a in path)
        steps = [a for a in path if not isinstance(a, str)]
        workload, num_steps = workload_of(self.bounds.config, steps)  # type: ignore[arg-type]
        events = [a for a in path if isinstance(a, str)]
        note = None if plain else f"the path also holds {events}: replay it with the paged state machine"
        return Counterexample(rule, message, workload, num_steps + len([a for a in events if a == STOP]), note)


def check(
    bounds: Bounds, factory: Callable[..., Any] = small_blocks, events: int = 1, max_states: int | None = None,
) -> PagedResult:
    """Explore every state reachable under `bounds` (and `events` stops or cancels) from a fresh paged
    `factory(...)`; see the module doc."""
    start = time.perf_counter()
    ex = _PagedExplorer(bounds, factory, events)
    node, counts = ex.root()
    frontier: list = [(0, node, counts)]
    depth, complete, counterexample = 0, True, None
    while frontier and counterexample is None:
        nxt: list = []
        for state, m, c in frontier:
            counterexample = ex.expand(state, m, c, nxt)
            if counterexample is not None:
                break
            if max_states is not None and ex.graph.num_states > max_states:
                complete = False
                break
        if not complete:
            break
        if nxt:
            depth += 1
        frontier = nxt
    longest = drain = None
    if counterexample is None and complete:
        live = analyse(ex.graph)
        if live.livelock is not None:
            cycle = f"a cycle of {len(live.livelock)} step(s) returns to the same state with work pending"
            counterexample = ex.fail(live.livelock[0], STEP, "PROGRESS", cycle)
        elif live.over_rank is not None:
            state, steps, work = live.over_rank
            counterexample = ex.fail(state, STEP, "PREEMPT-BOUND",
                                     f"needs {steps} steps to finish; the termination bound is {work}")
        else:
            longest, drain = live.longest_steps, live.drain_bound
    return PagedResult(bounds, ex.graph.num_states, ex.transitions, depth, time.perf_counter() - start, complete,
                       longest, drain, ex.max_preemptions, ex.preempting, ex.running, counterexample)
