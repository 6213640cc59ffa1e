"""Playing a workload through any scheduler under the monitor: the run loop, written once.

Arrivals are added just before their step, then the monitor steps the scheduler, until every
accepted request has finished. The loop is bounded by the work bound (rule PROGRESS): past it,
a run checking PROGRESS raises; a run that does not check it stops there, the rules it checks
having held so far (a scheduler that claims only part of the contract may never finish a request).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import RuleViolation
from .facts import StepFacts
from .monitor import Monitor
from .workload import Arrival, Workload


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


@dataclass(slots=True)
class RunStats:
    """What a run did, counted by the monitor."""

    steps: int = 0
    busy_steps: int = 0  # steps with a non-empty plan
    tokens: int = 0
    accepted: int = 0
    refused: int = 0
    finished: int = 0
    checks: int = 0  # rule predicates evaluated
    stopped_at_bound: int | None = None  # the work bound, where PROGRESS was not checked and work was pending

    @property
    def adds(self) -> int:
        return self.accepted + self.refused


class Player:
    """One run of `workload` through a fresh `factory(token_budget=, max_seqs=, kv_tokens=)`, checking
    `rules` (all when None) under `monitor` (the reservation design's Monitor unless told). Keeps
    its monitor, so that when the run ends in an exception the step and the adds so far are known
    (`monitor`, `step`)."""

    def __init__(
        self, workload: Workload, factory: Callable[..., Any], rules: Iterable[str] | None = None,
        on_step: Callable[[Monitor, StepFacts], None] | None = None,
        on_add: Callable[[Arrival, bool], None] | None = None,
        monitor: Callable[..., Any] = Monitor,
    ) -> None:
        self.workload = workload
        self.monitor_class = monitor  # Monitor, or a design's sibling with its face (PagedMonitor)
        self.factory = factory
        self.rules = None if rules is None else tuple(rules)
        self.on_step = on_step
        self.on_add = on_add
        self.monitor: Monitor | None = None

    @property
    def step(self) -> int:
        return 0 if self.monitor is None else self.monitor.shadow.step

    def play(self) -> RunStats:
        """Raises RuleViolation on the first broken rule; returns the counts when every rule held."""
        cfg = self.workload.config
        scheduler = self.factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
        monitor = self.monitor = self.monitor_class(scheduler, cfg, self.rules)
        checks_progress = any(r.id == "PROGRESS" for r in monitor.rules)
        arrivals = sorted(self.workload.requests, key=lambda a: a.arrival_step)  # stable: list order
        bound = getattr(self.monitor_class, "work_bound", work_bound)(self.workload)
        stats = RunStats()
        i = 0
        while True:
            step = monitor.shadow.step
            while i < len(arrivals) and arrivals[i].arrival_step <= step:
                a = arrivals[i]
                accepted = monitor.add(a.rid, a.prompt_len, a.max_new)
                stats.accepted += accepted
                stats.refused += not accepted
                if self.on_add is not None:
                    self.on_add(a, accepted)
                i += 1
            if i == len(arrivals) and monitor.is_idle:
                break
            if step >= bound:  # all work fits in `bound` steps: past it, the scheduler stalls
                if checks_progress:
                    pending = len(monitor.shadow.waiting) + len(monitor.shadow.running)
                    message = f"{pending} request(s) still pending after {step} steps; all work fits in {bound}"
                    raise RuleViolation("PROGRESS", step, message)
                stats.stopped_at_bound = bound  # PROGRESS not checked: stop, never loop forever
                break
            facts = monitor.step()
            stats.tokens += facts.num_tokens
            stats.finished += len(facts.finished)
            if self.on_step is not None:
                self.on_step(monitor, facts)
        stats.steps = monitor.num_steps
        stats.busy_steps = monitor.num_busy_steps
        stats.checks = monitor.num_steps * monitor.checks_per_step + monitor.num_adds
        return stats


def play(
    workload: Workload,
    factory: Callable[..., Any],
    rules: Iterable[str] | None = None,
    on_step: Callable[[Monitor, StepFacts], None] | None = None,
    on_add: Callable[[Arrival, bool], None] | None = None,
    monitor: Callable[..., Any] = Monitor,
) -> RunStats:
    """Play `workload` through a fresh `factory(token_budget=, max_seqs=, kv_tokens=)` under the
    monitor until every accepted request has finished. Raises RuleViolation on the first broken rule."""
    return Player(workload, factory, rules, on_step, on_add, monitor).play()
