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
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from stallfree.reference import Scheduler
from stallfree.spec import PROTOCOL, Monitor, RuleViolation, invariants

from . import lifecycle
from .bounds import Bounds
from .counterexample import Action, Counterexample, build
from .graph import STEP, Graph, analyse
from .snapshot import Hidden, Key, encode, fork, is_idle, remaining_work

Progress = Callable[[int, int, int, float], None]  # states, transitions, depth, seconds
PROGRESS_EVERY = 50_000  # states between progress reports
Node = tuple[int, "Monitor | None", "Key"]  # a state's number, its live monitor (None: restore it), its key
Inspect = Callable[[Monitor], "str | None"]  # a check of each state (it must not change it): what is wrong
INSPECTED = "INSPECTED STATE"  # the rule `CheckResult.inspected` names
HIDDEN = "HIDDEN STATE"  # the rule a counterexample names when states with one key behave differently
REVISITS_CHECKED = 5_000  # revisits of known states whose step is compared with theirs


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
    inspected: Counterexample | None = None  # the first state `inspect` reported, with its path

    @property
    def holds(self) -> bool:
        return self.complete and self.counterexample is None

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


def act(monitor: Monitor, action: Action) -> None:
    """Apply one action to `monitor` (and the scheduler it drives): a step, an add, or a stop or
    cancel action (`lifecycle`; raises lifecycle.Disabled where it names no request)."""
    if action is None:
        monitor.step()
    elif isinstance(action, tuple):
        monitor.add(monitor.num_adds, action[0], action[1])
    else:
        lifecycle.apply(monitor, action)


class _Explorer:
    """The search: one per check. A node is the live monitor (and scheduler) of a state."""

    def __init__(self, bounds: Bounds, factory: Callable[..., Any], hidden: Hidden | None,
                 inspect: Inspect | None = None, rules: Iterable[str] | None = None, compact: bool = False) -> None:
        self.bounds = bounds
        self.compact = compact
        self.rules = rules
        self.inspect = inspect
        self.inspected: Counterexample | None = None  # the first state `inspect` reported
        self.factory = factory
        self.hidden = hidden
        more = lifecycle.actions(bounds.max_seqs, bounds.num_requests) if bounds.lifecycle else ()
        self.actions: tuple[Action, ...] = (None, *bounds.universe(), *more)
        self.num_adds = len(bounds.universe())  # indexes 1..num_adds are the adds
        steps = {STEP} | {i for i, a in enumerate(self.actions) if isinstance(a, lifecycle.STEPS)}
        self.graph = Graph(len(self.actions), frozenset(steps))
        self.index: dict[Hashable, int] = {}  # stored key (`stored`) -> state number
        self.keys: list[Hashable] = []  # stored keys, by state number
        self.revisits_left = REVISITS_CHECKED
        self.transitions = 0

    def stored(self, key: Key) -> Hashable:
        """What the visited set keeps of a key: the key, or with `compact` its 64-bit fingerprint, as
        TLC keeps (two keys with one fingerprint would be merged: about n^2 / 2^65 for n states)."""
        return hash(key) if self.compact else key

    def fresh(self) -> Monitor:
        cfg = self.bounds.config
        scheduler = self.factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
        return Monitor(scheduler, cfg, self.rules)

    def root(self) -> tuple[Monitor, Key]:
        monitor = self.fresh()
        key = encode(monitor, self.hidden)
        self.index[self.stored(key)] = self.graph.add_state(-1, STEP, True, 0)
        self.keys.append(self.stored(key))
        return monitor, key

    def restore(self, state: int) -> Monitor:
        """State `state` rebuilt by replaying its path from a fresh scheduler (with `compact`, the
        frontier keeps no live scheduler): replay is deterministic, hidden state included."""
        monitor = self.fresh()
        for index in self.graph.path_to(state):
            act(monitor, self.actions[index])
        return monitor

    def expand(self, state: int, node: Monitor | None, key: Key, frontier: list[Node]) -> Counterexample | None:
        """Every action of `state`: judge it, record its successor, queue successors not seen before.
        The last action runs on `node` itself (restored first where the frontier kept none), the
        others on copies."""
        if node is None:
            node = self.restore(state)
        if self.inspect is not None and self.inspected is None:
            message = self.inspect(node)
            if message is not None:  # recorded; the search goes on
                path = [self.actions[s] for s in self.graph.path_to(state)] + [None]  # and its step
                self.inspected = build(self.bounds.config, path, INSPECTED, message, self.factory)
        indexes = list(range(len(self.actions)))
        if key[0] >= self.bounds.num_requests:  # no adds left
            indexes = [s for s in indexes if not 1 <= s <= self.num_adds]
        base = state * len(self.actions)
        for index in indexes:
            action = self.actions[index]
            monitor = node if index == indexes[-1] else fork(node)
            self.transitions += 1
            try:
                act(monitor, action)
            except lifecycle.Disabled:
                self.transitions -= 1
                continue
            except RuleViolation as violation:
                return self.fail(state, index, violation.rule, violation.message)
            except Exception as error:  # a scheduler that crashes has not spoken the protocol
                return self.fail(state, index, PROTOCOL, f"{type(error).__name__}: {error}")
            broken = invariants.broken(monitor.shadow, invariants.shown(monitor.scheduler))
            if broken is not None:
                return self.fail(state, index, *broken)
            child_key = encode(monitor, self.hidden)
            stored = self.stored(child_key)
            child = self.index.get(stored)
            if child is None:
                child = self.graph.add_state(state, index, is_idle(child_key), remaining_work(child_key))
                self.index[stored] = child
                self.keys.append(stored)
                frontier.append((child, None if self.compact else monitor, child_key))
            elif child < state and self.revisits_left > 0:
                differs = self.behaves_otherwise(monitor, child)
                if differs is not None:
                    path = [self.actions[s] for s in self.graph.path_to(state)] + [action, None]
                    return build(self.bounds.config, path, *differs, self.factory)
            self.graph.succ[base + index] = child
        return None

    def behaves_otherwise(self, monitor: Monitor, known: int) -> tuple[str, str] | None:
        """`monitor` has reached the key of state `known`, already expanded: step a copy of it and
        compare with `known`'s own step. Returns (rule, what happened) where they differ: the rule
        the copy's step broke, or HIDDEN where it reached another key, which means the scheduler
        decides on state outside the key, so merging the two states is unsound; None where alike."""
        self.revisits_left -= 1
        twin = fork(monitor)
        try:
            act(twin, None)
        except RuleViolation as violation:
            return violation.rule, f"{violation.message} (on a state whose key {self.keys[known]!r} stepped without it)"
        except Exception as error:  # a scheduler that crashes has not spoken the protocol
            return PROTOCOL, f"{type(error).__name__}: {error}"
        got, expected = encode(twin, self.hidden), self.keys[self.graph.succ[known * len(self.actions) + STEP]]
        if self.stored(got) == expected:
            return None
        return HIDDEN, (f"two states with the key {self.keys[known]!r} step differently: one to {expected!r}, the "
                        f"other to {got!r}; the scheduler decides on state the key leaves out (declare it as "
                        "hidden state)")

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
    inspect: Inspect | None = None,
    rules: Iterable[str] | None = None,
    compact: bool = False,
) -> CheckResult:
    """Explore every state reachable under `bounds` from a fresh `factory(...)`; see the module doc.
    `inspect`, where given, is called on every state before it is expanded, until it first reports
    something (`CheckResult.inspected`); it does not stop the search. `rules` (default all) are the
    rules the monitor judges: a negative control of a derived invariant leaves out its premises.
    `compact` keeps fingerprints in the visited set and no live scheduler in the frontier (each
    state is rebuilt by replaying its path when expanded): far less memory, more time."""
    start = time.perf_counter()
    explorer = _Explorer(bounds, factory, hidden, inspect, rules, compact)
    counterexample, complete, depth = _search(explorer, start, max_states, on_progress)
    longest = drain = None
    if counterexample is None and complete:
        counterexample, longest, drain = _liveness(explorer)
    return CheckResult(
        bounds, explorer.graph.num_states, explorer.transitions, depth, time.perf_counter() - start, complete,
        longest, drain, counterexample, explorer.inspected,
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
