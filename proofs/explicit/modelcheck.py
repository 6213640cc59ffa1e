"""An explicit-state model checker over the real scheduler code, breadth first, in the manner of TLC.

A state is a scheduler with its monitor. From each state the environment may add any request of the
bounds' universe (while adds remain) or let one step run (schedule, then complete). Every transition
is judged by the spec's own monitor (every step rule, NEVER-FIT on every add), every state by the
state invariants; states are deduplicated by their canonical key (`snapshot`). Once every reachable
state is known, `graph.analyse` checks liveness: no cycle of steps while work is pending, and the
longest behaviour and the most steps any state needs to finish (the termination bound).

Each new state keeps one live scheduler and monitor; every action runs on a copy of them. With
`compact`, the visited set keeps fingerprints, and the frontier keeps the live monitor of at most
`live` states (LIVE_STATES by default: the first found while that many are not held), the others only
as state numbers: such a state is rebuilt when it is expanded, from the deepest state on its path that
the last rebuild kept (`chain`). A live state costs about 4 KB and saves its rebuild (a copy and an
action). With
`workers` > 1, worker processes rebuild and expand the frontier (`workers`); this process keeps the
visited set and the graph, numbering states as one process does.

What differs between memory designs (the monitor, the actions, the key, the invariants) is the
`design`'s (`design.Reservation` by default; `paged` for the paged design).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from stallfree.reference import Scheduler
from stallfree.spec import PROTOCOL, InvalidField, Monitor, RuleViolation, check_int
from stallfree.spec.verdict import Verdict

from . import lifecycle, parallel
from .bounds import Bounds
from .chain import Chain
from .collector import young_only
from .counterexample import Action, Counterexample
from .coverage import CaseReport
from .coverage import before as coverage_before
from .design import Design, Reservation, Summary
from .design import act as act  # the reservation design's actions, as callers have always found them here
from .graph import STEP, Graph, analyse
from .snapshot import Hidden, fork

Progress = Callable[[int, int, int, float], None]  # states, transitions, depth, seconds
PROGRESS_EVERY = 50_000  # states between progress reports
Node = tuple[int, "Monitor | None"]  # a state's number, its live monitor (None: rebuild it)
Inspect = Callable[[Monitor], "str | None"]  # a check of each state (it must not change it): what is wrong
INSPECTED = "INSPECTED STATE"  # the rule `CheckResult.inspected` names
HIDDEN = "HIDDEN STATE"  # the rule a counterexample names when states with one key behave differently
REVISITS_CHECKED = 5_000  # revisits of known states whose step is compared with theirs
LIVE_STATES = 16_384  # compact: frontier states kept live (about 4 KB each), not rebuilt


class Tally:
    """What a check's result says of its figures, for both designs' results."""

    __slots__ = ()
    states: int
    seconds: float
    complete: bool  # every reachable state was explored
    counterexample: Counterexample | None

    @property
    def verdict(self) -> Verdict:
        """BROKEN if a counterexample was found (complete or not), unknown if the search stopped before
        every reachable state was explored, else holds: every rule held in every state at the bound."""
        if self.counterexample is not None:
            return Verdict.BROKEN
        return Verdict.HOLDS if self.complete else Verdict.UNKNOWN

    @property
    def holds(self) -> bool:
        return self.verdict is Verdict.HOLDS

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class CheckResult(Tally):
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
    coverage: list[CaseReport] | None = None  # each claim's cases and the transitions that reached them


@dataclass(frozen=True, slots=True)
class Broken:
    rule: str
    message: str


Outcome = tuple[int, Any, Any]  # (action index, fingerprint, summary) or (index, None, (rule, message))


class _Explorer:
    """The search: one per check. A node is the live monitor (and scheduler) of a state."""

    def __init__(self, bounds: Bounds, factory: Callable[..., Any], hidden: Hidden | None,
                 inspect: Inspect | None = None, rules: Iterable[str] | None = None, compact: bool = False,
                 symmetry: bool = False, design: Design | None = None, live: int = LIVE_STATES) -> None:
        self.bounds = bounds
        self.design = Reservation(bounds) if design is None else design
        self.symmetric = self.design.symmetric if symmetry else None  # a key's representative, or None
        if symmetry and self.symmetric is None:
            raise InvalidField(f"symmetry=True: {type(self.design).__name__} has no symmetry reduction")
        self.compact = compact
        self.live_left = check_int("live", live, 0)  # compact: live monitors the frontier may still hold
        self.rules = rules
        self.inspect = inspect
        self.inspected: Counterexample | None = None  # the first state `inspect` reported
        self.factory = factory
        self.hidden = hidden
        self.actions: tuple[Action, ...] = self.design.actions
        self.graph = Graph(len(self.actions), self.design.step_actions)
        self.index: dict[Hashable, int] = {}  # stored key (`stored`) -> state number
        self.keys: list[Hashable] = []  # stored keys, by state number
        self.revisits_left = REVISITS_CHECKED
        self.transitions = 0
        self.chain = Chain(self.fresh, self.design.act, fork, self.actions)  # the states of the last path rebuilt
        self.reported = 0  # states at the last progress report
        self.deferred: list[tuple[int, int, int]] = []  # revisits (state, action, known) to compare later
        self.coverage = self.design.coverage()  # the cases each claim is about, counted per transition

    def key(self, monitor: Monitor) -> Hashable:
        """The state's key (the design's), its ready requests' order dropped with `symmetry`."""
        key = self.design.key(monitor, self.hidden)
        return key if self.symmetric is None else self.symmetric(key)

    def stored(self, key: Hashable) -> Hashable:
        """What the visited set keeps of a key: the key, or with `compact` its 64-bit fingerprint, as
        TLC keeps (two keys with one fingerprint would be merged: about n^2 / 2^65 for n states)."""
        return hash(key) if self.compact else key

    def fresh(self) -> Monitor:
        cfg = self.bounds.config
        scheduler = self.factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
        return self.design.monitor(scheduler, cfg, self.rules)

    def root(self) -> Monitor:
        """The initial state, recorded as state 0: always live, and held against `live` (`released`)."""
        monitor = self.fresh()
        self.live_left -= self.compact
        stored = self.stored(self.key(monitor))
        self.index[stored] = self.graph.add_state(-1, STEP, True, 0)
        self.keys.append(stored)
        return monitor

    def replay(self, path: Iterable[int]) -> Monitor:
        """The state at the end of `path` (action indexes), rebuilt from a fresh scheduler: replay is
        deterministic, hidden state included, and reads no private field."""
        monitor = self.fresh()
        for index in path:
            self.design.act(monitor, self.actions[index])
        return monitor

    def rebuild(self, path: list[int], sibling_follows: bool) -> Monitor:
        """The state at the end of `path`, from the deepest state the chain keeps on it (`chain`); its
        parent is kept while `sibling_follows`."""
        return self.chain.rebuild(path, sibling_follows)

    def successors(self, node: Monitor) -> Iterator[tuple[int, Monitor | tuple[str, str]]]:
        """(action index, the monitor after it) for every enabled action of `node`, the last on `node`
        itself, the others on copies; a broken rule yields (index, (rule, message)) and ends it."""
        indexes = self.design.enabled(node)
        coverage = self.coverage
        was = None if coverage is None else coverage_before(node.shadow)
        stops_disabled = False  # a stop named more requests than are due: so does every later (larger) mask
        for index in indexes:
            action = self.actions[index]
            if stops_disabled and isinstance(action, lifecycle.Stop):
                continue  # disabled too, left out before the state is copied for it
            monitor = node if index == indexes[-1] else fork(node)
            try:
                facts = self.design.act(monitor, action)
            except lifecycle.Disabled:
                stops_disabled = stops_disabled or isinstance(action, lifecycle.Stop)
                continue
            except RuleViolation as violation:
                yield index, (violation.rule, violation.message)
                return
            except Exception as error:  # a scheduler that crashes has not spoken the protocol
                yield index, (PROTOCOL, f"{type(error).__name__}: {error}")
                return
            broken = self.design.broken(monitor)
            if broken is not None:
                yield index, broken
                return
            if coverage is not None:
                coverage.count(was, facts, action)  # type: ignore[arg-type]
            yield index, monitor

    def outcomes(self, node: Monitor) -> list[Outcome]:
        """`successors` as plain values a worker process sends back: (index, fingerprint, the design's
        summary), or (index, None, (rule, message)) for a broken rule."""
        out: list[Outcome] = []
        for index, after in self.successors(node):
            if isinstance(after, tuple):
                out.append((index, None, after))
            else:
                key = self.key(after)
                out.append((index, self.stored(key), self.design.summary(after, key)))
        return out

    def visit(self, node: Monitor, state: int) -> None:
        """`inspect` runs on state `state`'s `node` (until it first reports)."""
        if self.inspect is not None and self.inspected is None:
            message = self.inspect(node)
            if message is not None:  # recorded; the search goes on
                path = [self.actions[s] for s in self.graph.path_to(state)] + [None]  # and its step
                self.inspected = self.counterexample(path, INSPECTED, message)

    def expand(self, state: int, node: Monitor | None, frontier: list[Node], sibling_follows: bool = False
               ) -> Counterexample | None:
        """Every action of `state`: judge it, record its successor, queue successors not seen before.
        A state the frontier kept no copy of is rebuilt first (`rebuild`); the initial state is always
        kept."""
        if node is None:
            node = self.rebuild(self.graph.path_to(state), sibling_follows)
        self.visit(node, state)
        for index, after in self.successors(node):
            self.transitions += 1
            if isinstance(after, tuple):
                return self.fail(state, index, *after)
            key = self.key(after)
            found = self.record(state, index, self.stored(key), self.design.summary(after, key), after)
            if isinstance(found, Counterexample):
                return found
            if found:
                frontier.append((self.graph.num_states - 1, self.kept(after)))
        return None

    def kept(self, after: Monitor) -> Monitor | None:
        """What the frontier keeps of a new state's monitor: itself, or with `compact` itself while fewer
        than `live` are held (the search hands one back, `released`, once it has expanded it), else None."""
        if not self.compact:
            return after
        if self.live_left > 0:
            self.live_left -= 1
            return after
        return None

    def released(self, frontier: list[Node], i: int) -> None:
        """The search has expanded frontier[i]: a live monitor it held no longer counts (or is held)."""
        state, node = frontier[i]
        if node is not None and self.compact:
            self.live_left += 1
            frontier[i] = (state, None)

    def record(self, state: int, index: int, stored: Hashable, summary: Summary,
               after: Monitor | None) -> bool | Counterexample:
        """Record the transition (state, index) to the key `stored` (the state's `summary`: idle, remaining
        work, and what the design counts of a new state); True where that key is new. A
        revisit of a state already expanded is stepped once more and compared (`behaves_otherwise`);
        `after` is the monitor the transition left, or None to rebuild it."""
        child = self.index.get(stored)
        new = child is None
        if child is None:
            child = self.graph.add_state(state, index, summary[0], summary[1])
            self.design.seen(summary)
            self.index[stored] = child
            self.keys.append(stored)
        elif child < state and self.revisits_left > 0:
            differs = None
            if after is None:  # compared once the level is recorded (`parallel`)
                self.revisits_left -= 1
                self.deferred.append((state, index, child))
            else:
                differs = self.behaves_otherwise(after, child)
            if differs is not None:
                path = [self.actions[s] for s in self.graph.path_to(state)] + [self.actions[index], None]
                return self.counterexample(path, *differs)
        self.graph.succ[state * len(self.actions) + index] = child
        return new

    def past(self, max_states: int | None, on_progress: Progress | None, depth: int, start: float) -> bool:
        """Report progress every PROGRESS_EVERY states; True once past `max_states`."""
        num_states = self.graph.num_states
        if on_progress is not None and num_states - self.reported >= PROGRESS_EVERY:
            self.reported = num_states
            on_progress(num_states, self.transitions, depth, time.perf_counter() - start)
        return max_states is not None and num_states > max_states

    def behaves_otherwise(self, monitor: Monitor, known: int) -> tuple[str, str] | None:
        """`monitor` has reached the key of state `known`, already expanded: step a copy of it and
        compare with `known`'s own step (`differs`)."""
        self.revisits_left -= 1
        return self.differs(self.twin_step(monitor), known)

    def twin_step(self, monitor: Monitor) -> Broken | Hashable:
        """Step a copy of `monitor`: the stored key it reaches, or the rule its step broke."""
        twin = fork(monitor)
        try:
            self.design.act(twin, None)
        except RuleViolation as violation:
            return Broken(violation.rule, violation.message)
        except Exception as error:  # a scheduler that crashes has not spoken the protocol
            return Broken(PROTOCOL, f"{type(error).__name__}: {error}")
        return self.stored(self.key(twin))

    def differs(self, twin: Broken | Hashable, known: int) -> tuple[str, str] | None:
        """(rule, what happened) where a twin's step (`twin_step`) from a state with the key of `known`
        differs from `known`'s own: the rule the twin's step broke, or HIDDEN where it reached another
        key, which means the scheduler decides on state outside the key, so merging the two states is
        unsound; None where alike."""
        if isinstance(twin, Broken):
            return twin.rule, f"{twin.message} (on a state whose key {self.keys[known]!r} stepped without it)"
        expected = self.keys[self.graph.succ[known * len(self.actions) + STEP]]
        if twin == expected:
            return None
        return HIDDEN, (f"two states with the key {self.keys[known]!r} step differently: one to {expected!r}, the "
                        f"other to {twin!r}; the scheduler decides on state the key leaves out (declare it as "
                        "hidden state)")

    def counterexample(self, path: list[Action], rule: str, message: str) -> Counterexample:
        """The path (actions) to a broken `rule`, as the design writes it for replay."""
        return self.design.counterexample(self.bounds.config, path, rule, message, self.factory)

    def fail(self, state: int, index: int, rule: str, message: str) -> Counterexample:
        return self.counterexample([self.actions[s] for s in self.graph.path_to(state)] + [self.actions[index]],
                                   rule, message)

    def livelock(self, cycle: list[int]) -> Counterexample:
        path = [self.actions[s] for s in self.graph.path_to(cycle[0])] + [None] * len(cycle)
        return self.counterexample(
            path, "PROGRESS", f"a cycle of {len(cycle)} step(s) returns to the same state with work pending")


def check(
    bounds: Bounds,
    factory: Callable[..., Any] = Scheduler,
    hidden: Hidden | None = None,
    max_states: int | None = None,
    on_progress: Progress | None = None,
    inspect: Inspect | None = None,
    rules: Iterable[str] | None = None,
    compact: bool = False,
    workers: int = 1,
    symmetry: bool = False,
    design: Design | None = None,
    live: int = LIVE_STATES,
) -> CheckResult:
    """Explore every state reachable under `bounds` from a fresh `factory(...)`; see the module doc.
    `inspect`, where given, is called on every state before it is expanded, until it first reports
    something (`CheckResult.inspected`); it does not stop the search. `rules` (default all) are the
    rules the monitor judges: a negative control of a derived invariant leaves out its premises.
    `compact` keeps fingerprints in the visited set and at most `live` live schedulers in the frontier
    (every other state is rebuilt when it is expanded): far less memory. `workers` > 1 expands each level in that
    many processes (compact implied; `inspect` runs in this process, so it needs workers=1).
    `symmetry` merges states that differ only in the order of their ready requests (`symmetric`).
    `design` (default `design.Reservation(bounds)`) is the memory design's monitor, actions and key."""
    check_int("workers", workers)
    if workers > 1 and inspect is not None:
        raise InvalidField(f"workers={workers}: inspect runs on every state in this process; use workers=1")
    explorer = _Explorer(bounds, factory, hidden, inspect, rules, compact or workers > 1, symmetry, design, live)
    return _run(explorer, workers, max_states, on_progress)


@dataclass(frozen=True, slots=True)
class Explored:
    """A finished check with the state graph it built, for those who draw or inspect the graph."""

    result: CheckResult
    graph: Graph
    actions: tuple[Action, ...]  # the graph's action indexes, spelled out
    keys: list[Hashable]  # each state's key, by state number


def explore(bounds: Bounds, factory: Callable[..., Any] = Scheduler, hidden: Hidden | None = None,
            design: Design | None = None) -> Explored:
    """`check` in one process, keeping every state's whole key and the graph (no fingerprints, no
    workers: a small bound's graph, to draw or to compare)."""
    explorer = _Explorer(bounds, factory, hidden, design=design)
    result = _run(explorer, 1, None, None)
    return Explored(result, explorer.graph, explorer.actions, explorer.keys)


def _run(explorer: _Explorer, workers: int, max_states: int | None, on_progress: Progress | None) -> CheckResult:
    """The search (in `workers` processes), then liveness once every state is known."""
    start = time.perf_counter()
    bounds = explorer.bounds
    with young_only():  # no full collection while the search runs (`collector`)
        if workers > 1:
            counterexample, complete, depth = parallel.search(explorer, workers, start, max_states, on_progress)
        else:
            counterexample, complete, depth = _search(explorer, start, max_states, on_progress)
    longest = drain = None
    if counterexample is None and complete:
        counterexample, longest, drain = _liveness(explorer)
    return CheckResult(
        bounds, explorer.graph.num_states, explorer.transitions, depth, time.perf_counter() - start, complete,
        longest, drain, counterexample, explorer.inspected,
        None if explorer.coverage is None else explorer.coverage.report(),
    )


def _search(
    explorer: _Explorer, start: float, max_states: int | None, on_progress: Progress | None
) -> tuple[Counterexample | None, bool, int]:
    """Breadth first, level by level. Returns (counterexample, explored everything, depth reached)."""
    node = explorer.root()
    frontier: list[Node] = [(0, node)]
    depth = 0  # the level of the deepest state found
    parent = explorer.graph.parent
    while frontier:
        next_frontier: list[Node] = []
        for i, (state, node) in enumerate(frontier):
            sibling_follows = i + 1 < len(frontier) and parent[frontier[i + 1][0]] == parent[state]
            counterexample = explorer.expand(state, node, next_frontier, sibling_follows)
            explorer.released(frontier, i)
            if counterexample is not None:
                return counterexample, True, depth + 1
            if explorer.past(max_states, on_progress, depth + 1, start):
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
        return explorer.fail(state, STEP, *explorer.design.over_rank(steps, work)), None, None
    return None, liveness.longest_steps, liveness.drain_bound
