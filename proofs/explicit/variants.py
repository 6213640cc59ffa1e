"""The model checker for the variants' contracts: breadth first over every state a scheduler reaches
under a contract's monitor, with the actions that contract adds to the environment's.

The environment may add a request of the bounds' universe (with each priority of `priorities`, under a
priority contract), set the budget to any of `budgets` (up to `max_changes` times, under a budget-change
contract), or let one step run. Every transition is judged by the contract's monitor (every rule of
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
from dataclasses import dataclass
from typing import Any

from stallfree.spec import PROTOCOL, Arrival, Monitor, RuleViolation, Workload, invariants, play
from stallfree.spec.budget_change import BudgetMonitor, BudgetShadow
from stallfree.spec.contract import Contract
from stallfree.spec.priority import PriorityShadow
from stallfree.spec.workload import BudgetChange

from .bounds import Bounds
from .graph import STEP, Graph, analyse
from .snapshot import encode, fork

Action = tuple[Any, ...]  # ("step",), ("add", prompt_len, max_new, priority | None), ("budget", B)
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
        return (STEP_ACTION, *adds, *(("budget", b) for b in self.budgets))

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
    def holds(self) -> bool:
        return self.complete and self.rule is None


def key(monitor: Monitor) -> Hashable:
    """The state's canonical key under a variant's contract (see the module doc)."""
    base = encode(monitor)
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
    return (base, extra)


def act(monitor: Monitor, action: Action) -> None:
    if action[0] == "step":
        monitor.step()
    elif action[0] == "add":
        _, prompt_len, max_new, priority = action
        if priority is None:
            monitor.add(monitor.num_adds, prompt_len, max_new)
        else:
            monitor.add(monitor.num_adds, prompt_len, max_new, priority)  # type: ignore[call-arg]
    else:
        monitor.set_budget(action[1])  # type: ignore[attr-defined]


def enabled(monitor: Monitor, vb: VariantBounds, action: Action) -> bool:
    if action[0] == "add":
        return monitor.num_adds < vb.bounds.num_requests
    if action[0] == "budget":
        return getattr(monitor, "num_budget_calls", 0) < vb.max_changes
    return True


def check(
    contract: Contract, vb: VariantBounds, factory: Callable[..., Any], max_states: int | None = None,
    rules: tuple[str, ...] | None = None,
) -> VariantResult:
    """Explore every state `factory(...)` reaches under `contract` within `vb`, checking `rules` of it
    (all when None)."""
    start = time.perf_counter()
    cfg = vb.bounds.config
    held = tuple(i for i in invariants.INVARIANTS if i.id != "READY-WITHIN-BUDGET" or not vb.budgets)
    actions = vb.actions()
    graph = Graph(len(actions))
    scheduler = factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
    root = contract.watch(scheduler, cfg, rules)
    index = {key(root): graph.add_state(-1, STEP, True, 0)}
    frontier = [(0, root)]
    transitions = 0
    complete = True

    def result(rule: str | None = None, message: str | None = None, path: list[Action] | None = None) -> VariantResult:
        workload = replayed = None
        if path is not None:
            workload = workload_of(vb, path)
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
                monitor = fork(node)
                transitions += 1
                broken: tuple[str, str] | None = None
                try:
                    act(monitor, action)
                except RuleViolation as violation:
                    broken = violation.rule, violation.message
                except Exception as error:  # a scheduler that crashes has not spoken the protocol
                    broken = PROTOCOL, f"{type(error).__name__}: {error}"
                if broken is None:
                    broken = invariants.broken(monitor.shadow, invariants.shown(monitor.scheduler), held)
                if broken is not None:
                    return result(*broken, [*path_to(graph, actions, state), action])
                child_key = key(monitor)
                child = index.get(child_key)
                if child is None:
                    shadow = monitor.shadow
                    work = sum(t.request.prompt_len - t.num_prefilled + t.request.max_new - t.num_emitted
                               for t in (*shadow.waiting, *shadow.running.values()))
                    child = graph.add_state(state, number, shadow.is_idle, work)
                    index[child_key] = child
                    next_frontier.append((child, monitor))
                graph.succ[state * len(actions) + number] = child
            if max_states is not None and graph.num_states > max_states:
                complete = False
                return result()
        frontier = next_frontier
    liveness = analyse(graph)
    if liveness.livelock is not None:
        path = path_to(graph, actions, liveness.livelock[0]) + [STEP_ACTION] * len(liveness.livelock)
        return result("PROGRESS", f"a cycle of {len(liveness.livelock)} step(s) with work pending", path)
    if liveness.over_rank is not None:
        s, steps, work = liveness.over_rank
        return result("PROGRESS", f"needs {steps} steps to finish {work} units of work", path_to(graph, actions, s))
    drain = liveness.drain_bound
    return result()


def path_to(graph: Graph, actions: tuple[Action, ...], state: int) -> list[Action]:
    return [actions[index] for index in graph.path_to(state)]


def workload_of(vb: VariantBounds, path: list[Action]) -> Workload:
    """The workload that takes a fresh scheduler along `path` (add i gets rid i)."""
    arrivals: list[Arrival] = []
    changes: list[BudgetChange] = []
    steps = 0
    for action in path:
        if action[0] == "step":
            steps += 1
        elif action[0] == "add":
            arrivals.append(Arrival(len(arrivals), action[1], action[2], steps, action[3]))
        else:
            changes.append(BudgetChange(steps, action[1]))
    return Workload(vb.bounds.config, tuple(arrivals), tuple(changes))


def replay(
    workload: Workload, factory: Callable[..., Any], contract: Contract, rules: tuple[str, ...] | None = None,
) -> str | None:
    try:
        play(workload, factory, rules, contract=contract)
    except RuleViolation as violation:
        return str(violation)
    return None
