"""The model checker for the variants' contracts: breadth first over every state a scheduler reaches
under a contract's monitor, with the actions that contract adds to the environment's.

The environment may add a request of the bounds' universe (with each priority of `priorities`, under a
priority contract), set the budget to any of `budgets` (up to `max_changes` times, under a budget-change
contract), or let one step run; with `Bounds.lifecycle`, also stop any emitted token and cancel any
request, between steps or while a plan is pending, and offer a stop and a cancel that must be refused
(`lifecycle`, the reference's actions). Every transition is judged by the contract's monitor (every rule of
the contract), every state by the state invariants that still hold under it (READY-WITHIN-BUDGET is not
one of them once the budget can change); liveness is the explicit checker's: no cycle of steps with
work pending, and every state drains within its remaining work (`graph.analyse`).

A state's key is the explicit checker's (`snapshot.encode`) plus what the variant's rules and policy
read: the budget in force and the changes left, the ready requests' order of last tokens and their runs
without a token, the waiting requests' priorities and ages. Step numbers enter only as differences.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any

from stallfree.spec import PROTOCOL, Arrival, Cancel, Monitor, RuleViolation, Workload, invariant, play
from stallfree.spec.contract import Contract
from stallfree.spec.reservation import invariants
from stallfree.spec.reservation.shadow import Shadow
from stallfree.spec.shown import shown
from stallfree.spec.variants.budget_change import BudgetMonitor, BudgetShadow
from stallfree.spec.variants.priority import PriorityShadow
from stallfree.spec.verdict import Verdict
from stallfree.spec.workload import BudgetChange

from . import lifecycle
from .bounds import Bounds
from .graph import STEP, Graph, Liveness, analyse
from .snapshot import Hidden, encode, fork

Action = Any  # ("step",), ("add", prompt_len, max_new, priority | None), ("budget", B), or a lifecycle action
STEP_ACTION: Action = ("step",)


@dataclass(frozen=True, slots=True)
class VariantBounds:
    """The explicit checker's bounds, plus the budgets set_budget may be called with (at most
    `max_changes` calls, refused ones included) and the priorities requests may carry."""

    bounds: Bounds
    budgets: tuple[int, ...] = ()
    max_changes: int = 0
    priorities: tuple[int, ...] = ()

    def actions(self) -> tuple[Action, ...]:
        adds = [("add", p, m, q) for p, m in self.bounds.universe() for q in (self.priorities or (None,))]
        b = self.bounds
        ends = lifecycle.actions(b.max_seqs, b.num_requests) if b.lifecycle else ()
        return (STEP_ACTION, *adds, *(("budget", b) for b in self.budgets), *ends)

    def label(self) -> str:
        extra = f" budgets {','.join(map(str, self.budgets))} x{self.max_changes}" if self.budgets else ""
        extra += f" priorities {','.join(map(str, self.priorities))}" if self.priorities else ""
        return self.bounds.label() + extra


@dataclass(frozen=True, slots=True)
class VariantResult:
    contract: str
    bounds: VariantBounds
    states: int
    transitions: int
    seconds: float
    complete: bool
    drain_bound: int | None
    rule: str | None  # the rule a counterexample breaks, or None
    message: str | None
    workload: Workload | None  # the counterexample as a workload, replayable with `play(..., contract=)`
    replayed: str | None  # what the contract's monitor reports on that workload: the independent confirmation

    @property
    def verdict(self) -> Verdict:
        """BROKEN if a rule was broken, unknown if the search stopped early, else holds."""
        if self.rule is not None:
            return Verdict.BROKEN
        return Verdict.HOLDS if self.complete else Verdict.UNKNOWN

    @property
    def holds(self) -> bool:
        return self.verdict is Verdict.HOLDS


def key(monitor: Monitor, hidden: Hidden | None = None) -> Hashable:
    """The state's canonical key under a variant's contract (see the module doc), with the scheduler's
    `hidden` state where given (a negative control's own line or ghosts)."""
    base = encode(monitor, hidden)
    s = monitor.shadow
    extra: tuple[Any, ...] = ()
    if isinstance(s, BudgetShadow):
        ready = s.ready()
        order = sorted(range(len(ready)), key=lambda i: (s.last_token.get(ready[i].rid, -1), i))
        runs = tuple((s.runs[t.rid].steps, s.runs[t.rid].num_ready, s.runs[t.rid].min_budget)
                     if t.rid in s.runs else None for t in ready)
        assert isinstance(monitor, BudgetMonitor)
        extra = (s.config.token_budget, monitor.num_budget_calls, tuple(order), runs)
    if isinstance(s, PriorityShadow):
        extra = tuple((s.priority[t.rid], s.step - s.arrival[t.rid]) for t in s.waiting)
    # The reservations of running requests cancelled since the last schedule(): KV judges them at the
    # next one. While some are owed, the free KV a scheduler shows may be either of two values (returned
    # at once, or not yet), and the two continue differently: both go in the key, or a scheduler that
    # keeps a cancelled reservation merges with one that returned it and is never stepped to KV's judgement.
    owed = (s.kv_owed, getattr(monitor.scheduler, "free_kv", None)) if s.kv_owed else None
    return (base, extra, owed)


def act(monitor: Monitor, action: Action) -> None:
    """Apply one action; a lifecycle action raises lifecycle.Disabled where it names no request."""
    if not isinstance(action, tuple):
        lifecycle.apply(monitor, action)
    elif action[0] == "step":
        monitor.step()
    elif action[0] == "add":
        _, prompt_len, max_new, priority = action
        if priority is None:
            monitor.add(monitor.num_adds, prompt_len, max_new)
        else:
            monitor.add(monitor.num_adds, prompt_len, max_new, priority)  # type: ignore[call-arg]
    else:
        monitor.set_budget(action[1])  # type: ignore[attr-defined]


def runs_step(action: Action) -> bool:
    return action == STEP_ACTION or isinstance(action, lifecycle.STEPS)


def enabled(monitor: Monitor, vb: VariantBounds, action: Action) -> bool:
    if not isinstance(action, tuple):
        return True  # a lifecycle action says when it names no request (lifecycle.Disabled)
    if action[0] == "add":
        return monitor.num_adds < vb.bounds.num_requests
    if action[0] == "budget":
        return getattr(monitor, "num_budget_calls", 0) < vb.max_changes
    return True


def transition(node: Monitor, action: Action, held: tuple[Any, ...]) -> Monitor | tuple[str, str] | None:
    """`action` on a copy of `node`: the monitor after it, the (rule, what happened) it broke (a rule,
    the protocol, or a state invariant of `held`), or None where the action names no request."""
    monitor = fork(node)
    try:
        act(monitor, action)
    except lifecycle.Disabled:
        return None
    except RuleViolation as violation:
        return violation.rule, violation.message
    except Exception as error:  # a scheduler that crashes has not spoken the protocol
        return PROTOCOL, f"{type(error).__name__}: {error}"
    broken = invariant.broken(monitor.shadow, shown(monitor.scheduler), held)
    return monitor if broken is None else broken


def check(
    contract: Contract, vb: VariantBounds, factory: Callable[..., Any], max_states: int | None = None,
    rules: tuple[str, ...] | None = None, hidden: Hidden | None = None,
) -> VariantResult:
    """Explore every state `factory(...)` reaches under `contract` within `vb`, checking `rules` of it
    (all when None); `hidden` names state of the scheduler's own that its decisions read (`key`)."""
    start = time.perf_counter()
    cfg = vb.bounds.config
    held = tuple(i for i in invariants.INVARIANTS if i.id != "READY-WITHIN-BUDGET" or not vb.budgets)
    actions = vb.actions()
    graph = Graph(len(actions), frozenset(i for i, a in enumerate(actions) if runs_step(a)))
    scheduler = factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
    root = contract.watch(scheduler, cfg, rules)
    index = {key(root, hidden): graph.add_state(-1, STEP, True, 0)}
    frontier = [(0, root)]
    transitions = 0
    complete = True

    def result(rule: str | None = None, message: str | None = None, path: list[Action] | None = None) -> VariantResult:
        workload = replayed = None
        if path is not None:
            workload = workload_of(vb, path, factory, contract)
            replayed = replay(workload, factory, contract, rules)
        return VariantResult(contract.name, vb, graph.num_states, transitions, time.perf_counter() - start, complete,
                             drain, rule, message, workload, replayed)

    drain = None
    while frontier:
        next_frontier = []
        for state, node in frontier:
            for number, action in enumerate(actions):
                if not enabled(node, vb, action):
                    continue
                monitor = transition(node, action, held)
                if monitor is None:
                    continue
                transitions += 1
                if isinstance(monitor, tuple):
                    return result(*monitor, [*path_to(graph, actions, state), action])
                child_key = key(monitor, hidden)
                child = index.get(child_key)
                if child is None:
                    child = graph.add_state(state, number, monitor.shadow.is_idle, work_left(monitor.shadow))
                    index[child_key] = child
                    next_frontier.append((child, monitor))
                graph.succ[state * len(actions) + number] = child
            if max_states is not None and graph.num_states > max_states:
                complete = False
                return result()
        frontier = next_frontier
    liveness = analyse(graph)
    stall = progress_broken(graph, actions, liveness)
    if stall is not None:
        return result(*stall)
    drain = liveness.drain_bound
    return result()


def work_left(shadow: Shadow) -> int:
    """The units of work still pending: prompt tokens to prefill and tokens to emit, over every request."""
    return sum(t.request.prompt_len - t.num_prefilled + t.request.max_new - t.num_emitted
               for t in (*shadow.waiting, *shadow.running.values()))


def progress_broken(
    graph: Graph, actions: tuple[Action, ...], liveness: Liveness,
) -> tuple[str, str, list[Action]] | None:
    """PROGRESS's rule, message and witness path when the explored graph has a livelock or a state that
    needs more steps than its work allows; None when it has neither."""
    if liveness.livelock is not None:
        path = path_to(graph, actions, liveness.livelock[0]) + [STEP_ACTION] * len(liveness.livelock)
        return "PROGRESS", f"a cycle of {len(liveness.livelock)} step(s) with work pending", path
    if liveness.over_rank is not None:
        s, steps, work = liveness.over_rank
        return "PROGRESS", f"needs {steps} steps to finish {work} units of work", path_to(graph, actions, s)
    return None


def path_to(graph: Graph, actions: tuple[Action, ...], state: int) -> list[Action]:
    return [actions[index] for index in graph.path_to(state)]


def workload_of(vb: VariantBounds, path: list[Action], factory: Callable[..., Any], contract: Contract) -> Workload:
    """The workload that takes a fresh scheduler along `path` (add i gets rid i; stops and cancels as
    `lifecycle.record` writes them), read off a replay of the path under the contract's monitor
    checking no rule (the scheduler may break one on the way: the replay stops there). Where the last
    step starts with nothing waiting or running, a one-token request arrives just before it, as in
    `lifecycle.workload_of`, so that `play` runs that step."""
    cfg = vb.bounds.config
    monitor = contract.watch(factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs,
                                     kv_tokens=cfg.kv_tokens), cfg, ())
    arrivals: list[Arrival] = []
    changes: list[BudgetChange] = []
    stop_after: dict[int, int] = {}
    cancels: list[Cancel] = []
    idle_step: int | None = None  # the step of the last step action, if it started idle
    try:
        for action in path:
            step = monitor.shadow.step
            if runs_step(action):
                idle_step = step if monitor.is_idle else None
            if not isinstance(action, tuple):
                lifecycle.record(monitor, action, stop_after, cancels)
                continue
            if action[0] == "add":
                arrivals.append(Arrival(len(arrivals), action[1], action[2], step, action[3]))
            elif action[0] == "budget":
                changes.append(BudgetChange(step, action[1]))
            act(monitor, action)
    except Exception:  # the broken step itself: the workload up to it is what replays it
        pass
    arrivals = [replace(a, stop_after=stop_after.get(a.rid)) for a in arrivals]
    if idle_step is not None:
        arrivals.append(Arrival(len(arrivals), 1, 1, idle_step))
    return Workload(cfg, tuple(arrivals), tuple(changes), cancels=tuple(cancels))


def replay(
    workload: Workload, factory: Callable[..., Any], contract: Contract, rules: tuple[str, ...] | None = None,
) -> str | None:
    try:
        play(workload, factory, rules, contract=contract)
    except RuleViolation as violation:
        return str(violation)
    return None
