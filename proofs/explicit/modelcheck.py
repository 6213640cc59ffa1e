"""An explicit-state model checker over the real scheduler code, breadth first, in the manner of TLC.

A state is a scheduler with its monitor. From each state the environment may add any request of the
bounds' universe (while adds remain) or let one step run (schedule, then complete). Every transition
is judged by the spec's own monitor (every step rule, NEVER-FIT on every add), every state by the
state invariants; states are deduplicated by their canonical key (`snapshot`). Once every reachable
state is known, `graph.analyse` checks liveness: no cycle of steps while work is pending, and the
longest behaviour and the most steps any state needs to finish (the termination bound).

Each new state keeps one live scheduler and monitor; every action runs on a copy of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stallfree.reference import Scheduler
from stallfree.spec import PROTOCOL, Monitor, RuleViolation, invariants

from .bounds import Bounds
from .counterexample import Action, Counterexample, build
from .graph import STEP, Graph, analyse
from .snapshot import Hidden, Key, encode, fork, is_idle, remaining_work

Progress = Callable[[int, int, int, float], None]  # states, transitions, depth, seconds
PROGRESS_EVERY = 50_000  # states between progress reports
Node = tuple[int, Monitor, "Key"]  # a state's number, its live monitor, its key


@dataclass(frozen=True, slots=True)
class CheckResult:
    bounds: Bounds
    states: int
    transitions: int
    depth: int  # BFS levels: the most actions on a shortest path to any state
    seconds: float
    complete: bool  # every reachable state was explored (False: max_states stopped it)
    longest_steps: int | None  # the longest behaviour, in steps, until all its work is done
    drain_bound: int | None  # the most steps any state needs to finish once adds stop
    counterexample: Counterexample | None

    @property
    def holds(self) -> bool:
        return self.complete and self.counterexample is None

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


def act(monitor: Monitor, action: Action) -> None:
    """Apply one action to `monitor` (and the scheduler it drives): a step, or an add."""
    if action is None:
        monitor.step()
    else:
        monitor.add(monitor.num_adds, action[0], action[1])


class _Explorer:
    """The search: one per check. A node is the live monitor (and scheduler) of a state."""

    def __init__(self, bounds: Bounds, factory: Callable[..., Any], hidden: Hidden | None) -> None:
        self.bounds = bounds
        self.factory = factory
        self.hidden = hidden
        self.actions: tuple[Action, ...] = (None, *bounds.universe())
        self.graph = Graph(len(self.actions))
        self.index: dict[Key, int] = {}
        self.transitions = 0

    def root(self) -> tuple[Monitor, Key]:
        cfg = self.bounds.config
        scheduler = self.factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
        monitor = Monitor(scheduler, cfg)
        key = encode(monitor, self.hidden)
        self.index[key] = self.graph.add_state(-1, STEP, True, 0)
        return monitor, key

    def expand(self, state: int, node: Monitor, key: Key, frontier: list[Node]) -> Counterexample | None:
        """Every action of `state`: judge it, record its successor, queue successors not seen before.
        The last action runs on `node` itself, the others on copies."""
        num_enabled = len(self.actions) if key[0] < self.bounds.num_requests else 1
        base = state * len(self.actions)
        for index in range(num_enabled):
            action = self.actions[index]
            monitor = node if index == num_enabled - 1 else fork(node)
            self.transitions += 1
            try:
                act(monitor, action)
            except RuleViolation as violation:
                return self.fail(state, index, violation.rule, violation.message)
            except Exception as error:  # a scheduler that crashes has not spoken the protocol
                return self.fail(state, index, PROTOCOL, f"{type(error).__name__}: {error}")
            broken = invariants.broken(monitor.shadow, invariants.shown(monitor.scheduler))
            if broken is not None:
                return self.fail(state, index, *broken)
            child_key = encode(monitor, self.hidden)
            child = self.index.get(child_key)
            if child is None:
                child = self.graph.add_state(state, index, is_idle(child_key), remaining_work(child_key))
                self.index[child_key] = child
                frontier.append((child, monitor, child_key))
            self.graph.succ[base + index] = child
        return None

    def fail(self, state: int, index: int, rule: str, message: str) -> Counterexample:
        path = [self.actions[s] for s in self.graph.path_to(state)] + [self.actions[index]]
        return build(self.bounds.config, path, rule, message, self.factory)

    def livelock(self, cycle: list[int]) -> Counterexample:
        path = [self.actions[s] for s in self.graph.path_to(cycle[0])] + [None] * len(cycle)
        return build(
            self.bounds.config, path, "PROGRESS",
            f"a cycle of {len(cycle)} step(s) returns to the same state with work pending", self.factory,
        )


def check(
    bounds: Bounds,
    factory: Callable[..., Any] = Scheduler,
    hidden: Hidden | None = None,
    max_states: int | None = None,
    on_progress: Progress | None = None,
) -> CheckResult:
    """Explore every state reachable under `bounds` from a fresh `factory(...)`; see the module doc."""
    start = time.perf_counter()
    explorer = _Explorer(bounds, factory, hidden)
    counterexample, complete, depth = _search(explorer, start, max_states, on_progress)
    longest = drain = None
    if counterexample is None and complete:
        counterexample, longest, drain = _liveness(explorer)
    return CheckResult(
        bounds, explorer.graph.num_states, explorer.transitions, depth, time.perf_counter() - start, complete,
        longest, drain, counterexample,
    )


def _search(
    explorer: _Explorer, start: float, max_states: int | None, on_progress: Progress | None
) -> tuple[Counterexample | None, bool, int]:
    """Breadth first, level by level. Returns (counterexample, explored everything, depth reached)."""
    node, key = explorer.root()
    frontier: list[Node] = [(0, node, key)]
    depth = 0  # the level of the deepest state found
    reported = 0
    while frontier:
        next_frontier: list[Node] = []
        for state, node, key in frontier:
            counterexample = explorer.expand(state, node, key, next_frontier)
            if counterexample is not None:
                return counterexample, True, depth + 1
            num_states = explorer.graph.num_states
            if on_progress is not None and num_states - reported >= PROGRESS_EVERY:
                reported = num_states
                on_progress(num_states, explorer.transitions, depth + 1, time.perf_counter() - start)
            if max_states is not None and num_states > max_states:
                return None, False, depth + 1
        if next_frontier:
            depth += 1
        frontier = next_frontier
    return None, True, depth


def _liveness(explorer: _Explorer) -> tuple[Counterexample | None, int | None, int | None]:
    """(counterexample, longest behaviour, steps to drain) from the finished graph."""
    liveness = analyse(explorer.graph)
    if liveness.livelock is not None:
        return explorer.livelock(liveness.livelock), None, None
    if liveness.over_rank is not None:
        state, steps, work = liveness.over_rank
        message = f"needs {steps} steps to finish {work} units of work: a step did no work"
        return explorer.fail(state, STEP, "PROGRESS", message), None, None
    return None, liveness.longest_steps, liveness.drain_bound
