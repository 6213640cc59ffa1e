"""Playing a workload through any scheduler under the monitor: the run loop, written once.

Arrivals are added just before their step (after the budget changes of that step, where the
workload has a budget schedule), then the workload's cancels for that step, then the monitor steps
the scheduler (cancels marked pending while its plan is pending; a request whose `stop_after`-th
token comes out on the step is passed to complete() as stopped), until every accepted request has
ended. The contract (`stallfree.spec.contract`) brings its own monitor and says what a workload
may carry. Cancels left when nothing is pending are offered at the end: each must be refused, its
rid being no waiting or running request's. The loop is bounded by the contract's work bound (rule
PROGRESS): past it, a run checking PROGRESS raises; a run that does not check it stops there, the
rules it checks having held so far (a scheduler that claims only part of the contract may never
finish a request).

The loop drives the monitor itself, or an `Engine` over it: the executor runs each step as a
forward pass (`executor/engine/job.py:drive`), and the loop still orders the adds, the cancels and the steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from . import registry
from .contract import BUDGETS, CONTENTS, PRIORITIES, STOPS, Contract
from .errors import InvalidField, RuleViolation
from .workload import Arrival, Cancel, Workload

# A design's monitor (its contract's `watch`: a `Watch` with a shadow, due() and pending) and the
# facts of one step it returns: any design's, so the loop names none.
Monitor = Any
StepFacts = Any


def work_bound(workload: Workload) -> int:
    """Steps within which every request of `workload` must have finished (rule PROGRESS).

    A plan that is not empty runs at least one prompt position or emits one token, so pending work
    (remaining prompt positions plus remaining tokens) falls by at least one each busy step; an empty
    plan while work is pending is itself a PROGRESS violation."""
    last_arrival = max((a.arrival_step for a in workload.requests), default=0)
    work = 0
    for a in workload.requests:
        if type(a.prompt_len) is int and type(a.max_new) is int:
            work += max(a.prompt_len, 0) + max(a.max_new, 0)
    return last_arrival + work + 1


class Stepped(Protocol):
    """What a step did, as the loop counts it (a design's facts are one)."""

    num_tokens: int
    finished: Any  # the rids that ended on their last token or a stop
    stopped: Any  # of which those that stopped


class Engine(Protocol):
    """What the loop drives in place of the bare monitor: it adds and cancels through `monitor` and
    runs each step whole (plan, the work, complete), returning what the step did. The executor is one
    (each step a forward pass, its stops its own sampled end tokens)."""

    @property
    def monitor(self) -> Any: ...

    def add(self, rid: Any, prompt_len: Any, max_new: Any, *extra: Any) -> bool: ...

    def cancel(self, rid: Any) -> bool: ...

    def step(self) -> Stepped: ...


@dataclass(slots=True)
class RunStats:
    """What a run did, counted by the monitor."""

    steps: int = 0
    busy_steps: int = 0  # steps with a non-empty plan
    tokens: int = 0
    accepted: int = 0
    refused: int = 0
    finished: int = 0  # requests that ended: their last token, a stop or a cancel
    stopped: int = 0
    cancelled: int = 0  # cancels accepted
    cancels_refused: int = 0
    checks: int = 0  # rule predicates evaluated
    stopped_at_bound: int | None = None  # the work bound, where PROGRESS was not checked and work was pending

    @property
    def adds(self) -> int:
        return self.accepted + self.refused


class Player:
    """One run of `workload` through a fresh `factory(token_budget=, max_seqs=, kv_tokens=)`, checking
    `rules` (all when None) of `contract` (the design the factory declares, the reservation's if none),
    or through `engine` (its monitor, already watching; then `on_step` sees what its steps return).
    Keeps its monitor, so that when the run ends in an exception the step and the adds so far are known
    (`monitor`, `step`)."""

    def __init__(
        self, workload: Workload, factory: Callable[..., Any] | None, rules: Iterable[str] | None = None,
        on_step: Callable[[Monitor, StepFacts], None] | None = None,
        on_add: Callable[[Arrival, bool], None] | None = None,
        contract: Contract | None = None,
        on_cancel: Callable[[Cancel, bool, bool], None] | None = None,
        engine: Engine | None = None,
    ) -> None:
        self.workload = workload
        self.contract = contract or registry.of(factory)
        self.engine = engine
        self.factory = factory
        self.rules = None if rules is None else tuple(rules)
        self.on_step = on_step
        self.on_add = on_add
        self.on_cancel = on_cancel  # (the cancel, accepted, offered while a plan was pending)
        self.monitor: Monitor | None = None

    @property
    def step(self) -> int:
        return 0 if self.monitor is None else self.monitor.shadow.step

    def play(self) -> RunStats:
        """Raises RuleViolation on the first broken rule; returns the counts when every rule held."""
        monitor = self._watch()
        engine = self.engine
        driven = monitor if engine is None else engine  # what adds and cancels go to
        budgets = self.workload.budgets
        checks_progress = any(r.id == "PROGRESS" for r in monitor.rules)
        arrivals = sorted(self.workload.requests, key=lambda a: a.arrival_step)  # stable: list order
        cancels = sorted(self.workload.cancels, key=lambda c: (c.step, c.pending))
        stop_after: dict[int, int] = {}  # rid -> the token it stops on, for accepted requests
        bound = self.contract.work_bound(self.workload)
        stats = RunStats()
        i = j = b = 0  # the next arrival, cancel and budget change
        num_arrivals, num_cancels, num_budgets = len(arrivals), len(cancels), len(budgets)
        while True:
            step = monitor.shadow.step
            while b < num_budgets and budgets[b].step <= step:
                monitor.set_budget(budgets[b].token_budget)
                b += 1
            while i < num_arrivals and arrivals[i].arrival_step <= step:
                self._add(driven, arrivals[i], stats, stop_after)
                i += 1
            while j < num_cancels and (cancels[j].step < step or (cancels[j].step == step and not cancels[j].pending)):
                self._cancel(driven, monitor, cancels[j], stats)
                j += 1
            if i == num_arrivals and monitor.is_idle:
                for c in cancels[j:]:  # nothing waits or runs: each must be refused
                    self._cancel(driven, monitor, c, stats)
                break
            if step >= bound:  # all work fits in `bound` steps: past it, the scheduler stalls
                if checks_progress:
                    raise stalled(monitor, bound)
                stats.stopped_at_bound = bound  # PROGRESS not checked: stop, never loop forever
                break
            if engine is None:
                monitor.plan()
                while j < num_cancels and cancels[j].step == step:
                    self._cancel(monitor, monitor, cancels[j], stats)
                    j += 1
                facts = self._complete(monitor, stop_after) if stop_after else monitor.complete()
            else:  # the engine plans, runs and completes the step (no cancel falls inside it: see _watch)
                facts = engine.step()
            stats.tokens += facts.num_tokens
            stats.finished += len(facts.finished)
            stats.stopped += len(facts.stopped)
            if self.on_step is not None:
                self.on_step(monitor, facts)
        stats.steps = monitor.num_steps
        stats.busy_steps = monitor.num_busy_steps
        stats.checks = monitor.num_steps * monitor.checks_per_step + monitor.num_adds + len(cancels)
        return stats

    def _watch(self) -> Any:
        """The monitor over a fresh scheduler (the engine's own, given one); refuses, before any step, a
        workload it cannot judge."""
        cfg = self.workload.config
        if self.engine is not None:
            monitor = self.monitor = self.engine.monitor
            pending = next((c for c in self.workload.cancels if c.pending), None)
            if pending is not None:
                raise InvalidField(f"cancel of rid {pending.rid!r} at step {pending.step}: pending=true needs the "
                                   "monitor's own step; an engine runs each step whole")
        else:
            assert self.factory is not None, "a Player plays through a factory or an engine"
            scheduler = self.factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
            monitor = self.monitor = self.contract.watch(scheduler, cfg, self.rules)
        refuse_uncarried(self.workload, self.contract)
        if self.workload.has_stops:  # refuse up front, not halfway through the run
            monitor.require("stop")
        if self.workload.cancels:
            monitor.require("cancel")
        return monitor

    def _add(self, driven: Monitor | Engine, a: Arrival, stats: RunStats, stop_after: dict[int, int]) -> None:
        """Offers one arrival; an accepted request that stops early is noted in `stop_after`."""
        accepted = driven.add(a.rid, a.prompt_len, a.max_new, *extra_of(a))
        stats.accepted += accepted
        stats.refused += not accepted
        if accepted:
            if a.stop_after is not None and a.stop_after < a.max_new:
                stop_after[a.rid] = a.stop_after
            else:
                stop_after.pop(a.rid, None)
        if self.on_add is not None:
            self.on_add(a, accepted)

    @staticmethod
    def _complete(monitor: Monitor, stop_after: dict[int, int]) -> StepFacts:
        """Completes the plan, stopping each request whose next token is the one it stops on."""
        tracks = monitor.shadow.tracks
        return monitor.complete([rid for rid in monitor.due() if rid in stop_after
                                 and tracks[rid].num_emitted + 1 == stop_after[rid]])

    def _cancel(self, driven: Monitor | Engine, monitor: Monitor, cancel: Cancel, stats: RunStats) -> None:
        pending = monitor.pending is not None
        num_ended = len(monitor.shadow.ended)
        accepted = driven.cancel(cancel.rid)
        stats.finished += len(monitor.shadow.ended) - num_ended  # ended now, not with a pending plan
        if accepted:
            stats.cancelled += 1
        else:
            stats.cancels_refused += 1
        if self.on_cancel is not None:
            self.on_cancel(cancel, accepted, pending)


def play(
    workload: Workload,
    factory: Callable[..., Any],
    rules: Iterable[str] | None = None,
    on_step: Callable[[Monitor, StepFacts], None] | None = None,
    on_add: Callable[[Arrival, bool], None] | None = None,
    contract: Contract | None = None,
    on_cancel: Callable[[Cancel, bool, bool], None] | None = None,
) -> RunStats:
    """Play `workload` through a fresh `factory(token_budget=, max_seqs=, kv_tokens=)` under the
    monitor of `contract` (the design the factory declares, when none is given) until every accepted
    request has ended. Raises RuleViolation on the first broken rule."""
    return Player(workload, factory, rules, on_step, on_add, contract, on_cancel).play()


def stalled(monitor: Monitor, bound: int) -> RuleViolation:
    """PROGRESS broken: requests still pending at the work bound `bound`."""
    step = monitor.shadow.step
    pending = len(monitor.shadow.waiting) + len(monitor.shadow.running)
    return RuleViolation("PROGRESS", step, f"{pending} request(s) still pending after {step} steps; "
                                           f"all work fits in {bound}")


def extra_of(a: Arrival) -> tuple[Any, ...]:
    """What add() takes beyond (rid, prompt_len, max_new) for arrival `a`: its content (the prefix
    design's), or its priority (a priority contract's), or nothing."""
    if a.content is not None:
        return (a.content,)
    return () if a.priority is None else (a.priority,)


# What a workload may carry, each refused with the advice of the contract that takes it, when its
# contract does not: the budget schedule, priorities, contents, stops and cancels.
REFUSALS = {
    BUDGETS: "the workload has a budget schedule; its contract has no set_budget (use budget-change)",
    PRIORITIES: "the workload gives priorities; its contract has none (use aging or priority)",
    CONTENTS: "the workload gives contents; its design caches no prefixes (use stallfree.prefix)",
    STOPS: "the workload stops or cancels requests; this design's monitor judges those in its own tests, "
           "not in a played workload",
}


def carried(workload: Workload) -> list[str]:
    """What `workload` carries beyond its requests (keys of REFUSALS), in the order they are refused."""
    found = [BUDGETS] if workload.budgets else []
    if any(a.content is not None for a in workload.requests):
        found.append(CONTENTS)
    if any(a.priority is not None for a in workload.requests):
        found.append(PRIORITIES)
    if workload.has_stops or workload.cancels:
        found.append(STOPS)
    return found


def refuse_uncarried(workload: Workload, contract: Contract) -> None:
    """Raises InvalidField when `workload` carries what `contract` does not take."""
    for what in carried(workload):
        if what not in contract.carries:
            raise InvalidField(REFUSALS[what])
