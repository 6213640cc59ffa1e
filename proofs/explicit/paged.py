"""The model checker over the paged design: the shared breadth-first search (`modelcheck`), run on a
paged scheduler under the paged monitor, each state judged by the paged invariants (`Paged`, this
design's side of the check). Fingerprints (`compact`), worker processes, the revisit check of hidden
state, progress reports and `max_states` are the search's, as for the reservation design.

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

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from stallfree.paged import small_blocks
from stallfree.spec import Config
from stallfree.spec.paged.invariants import broken
from stallfree.spec.paged.monitor import PagedMonitor

from . import modelcheck
from .bounds import Bounds
from .counterexample import Action, Counterexample, workload_of
from .design import Design, Summary
from .graph import STEP
from .modelcheck import Progress
from .snapshot import Hidden

STOP = "stop"  # a step in which the first emitter's token ends it
CANCEL_NEWEST = "cancel newest"
CANCEL_OLDEST = "cancel oldest"
EVENTS = (STOP, CANCEL_NEWEST, CANCEL_OLDEST)  # action indexes 1, 2, 3; the adds follow
FIRST_ADD = 1 + len(EVENTS)
PagedAction = tuple[int, int] | str | None


@dataclass(frozen=True, slots=True)
class PagedResult(modelcheck.Tally):
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


class Environment(PagedMonitor):
    """The paged monitor, with what the environment has done that the monitor does not count: the
    stops and cancels it has offered (`events`, part of the key), and whether its last action
    preempted (`preempting`, counted by `Paged.seen`)."""

    def __init__(self, scheduler: Any, config: Config, rules: Iterable[str] | None = None) -> None:
        super().__init__(scheduler, config, rules)
        self.events = 0
        self.preempting = False


def key(m: Environment, hidden: Hidden | None = None) -> Hashable:
    s = m.shadow
    waiting = tuple((t.request.prompt_len, t.request.max_new, t.num_emitted, t.num_preemptions > 0) for t in s.waiting)
    running = tuple((t.request.prompt_len, t.request.max_new, t.num_emitted, t.num_preemptions > 0, t.num_computed,
                     t.target) for t in s.running.values())
    base = (m.num_adds, m.events, waiting, running, shown(m))
    return base if hidden is None else (*base, hidden(m.scheduler))


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


class Paged(Design):
    """The paged design's side of the search, for `events` stops or cancels per behaviour. It counts,
    over the new states, the most preemptions of one request, the states a preempting step reached
    and the states with a request running."""

    def __init__(self, bounds: Bounds, events: int = 1) -> None:
        self.bounds = bounds
        self.events = events
        shapes = [(p, q) for p in range(1, bounds.max_prompt + 1) for q in range(1, bounds.max_new + 1)]
        if bounds.never_fit:
            shapes.append((bounds.kv_tokens + 1, 1))  # its peak exceeds the whole pool: add() must refuse it
        self.actions: tuple[PagedAction, ...] = (None, *EVENTS, *shapes)
        self.step_actions = frozenset({STEP})  # the drain bound counts plain steps, as before stops were offered
        self.adds = range(FIRST_ADD, len(self.actions))
        self.stop = self.actions.index(STOP)
        self.cancels = [self.actions.index(CANCEL_NEWEST), self.actions.index(CANCEL_OLDEST)]
        self.max_preemptions = 0
        self.preempting_states = 0
        self.running_states = 0

    def monitor(self, scheduler: Any, config: Config, rules: Iterable[str] | None) -> Environment:
        return Environment(scheduler, config, rules)

    def enabled(self, monitor: Any) -> list[int]:
        indexes = [STEP]
        if monitor.events < self.events:
            if not monitor.shadow.is_idle:
                indexes.append(self.stop)
            if monitor.shadow.tracks:
                indexes += self.cancels
        if monitor.num_adds < self.bounds.num_requests:
            indexes += self.adds
        return indexes

    def act(self, monitor: Any, action: Action) -> None:
        m: Environment = monitor
        preempted_before = m.shadow.num_preemptions
        if action is None:
            m.step()
        elif action == STOP:
            m.events += 1
            m.plan()
            m.complete(m.due()[:1])
        elif isinstance(action, str):
            m.events += 1
            s = m.shadow
            order = [*s.running, *(t.rid for t in s.waiting)]
            m.cancel(order[-1] if action == CANCEL_NEWEST else order[0])
        else:
            m.add(m.num_adds, action[0], action[1])
        m.preempting = m.shadow.num_preemptions > preempted_before

    def key(self, monitor: Any, hidden: Hidden | None) -> Hashable:
        return key(monitor, hidden)

    def summary(self, monitor: Any, key: Any) -> Summary:
        s = monitor.shadow
        return s.is_idle, bound_work(monitor), s.max_preemptions, monitor.preempting, bool(s.running)

    def seen(self, summary: Summary) -> None:
        _, _, max_preemptions, preempting, running = summary
        self.max_preemptions = max(self.max_preemptions, max_preemptions)
        self.preempting_states += preempting
        self.running_states += running

    def broken(self, monitor: Any) -> tuple[str, str] | None:
        return broken(monitor.shadow, monitor.scheduler)

    def counterexample(self, config: Config, path: Sequence[Action], rule: str, message: str,
                       factory: Callable[..., Any]) -> Counterexample:
        """The adds and steps of `path` as a workload (a stop counts as a step); the stops and cancels,
        which a workload does not carry, named in its note."""
        plain = all(a is None or isinstance(a, tuple) for a in path)
        steps = [a for a in path if not isinstance(a, str)]
        workload, num_steps = workload_of(config, steps)
        events = [a for a in path if isinstance(a, str)]
        note = None if plain else f"the path also holds {events}: replay it with the paged state machine"
        return Counterexample(rule, message, workload, num_steps + len([a for a in events if a == STOP]), note)

    def over_rank(self, steps: int, work: int) -> tuple[str, str]:
        return "PREEMPT-BOUND", f"needs {steps} steps to finish; the termination bound is {work}"


def check(
    bounds: Bounds, factory: Callable[..., Any] = small_blocks, events: int = 1, max_states: int | None = None,
    on_progress: Progress | None = None, hidden: Hidden | None = None, compact: bool = False, workers: int = 1,
) -> PagedResult:
    """Explore every state reachable under `bounds` (and `events` stops or cancels) from a fresh paged
    `factory(...)`; see the module doc, and `modelcheck.check` for `compact` and `workers`."""
    design = Paged(bounds, events)
    r = modelcheck.check(bounds, factory, hidden, max_states, on_progress, compact=compact, workers=workers,
                         design=design)
    return PagedResult(bounds, r.states, r.transitions, r.depth, r.seconds, r.complete, r.longest_steps,
                       r.drain_bound, design.max_preemptions, design.preempting_states, design.running_states,
                       r.counterexample)
