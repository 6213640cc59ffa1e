"""Playing one workload through a scheduler under the monitor, with a step bound.

The same run as `stallfree.spec.play` (when PROGRESS is not among the checked rules and work is still
pending at the work bound, the run stops there, its checked rules having held so far: a scheduler
that claims only part of the contract may never finish a request). What Player adds is the monitor
itself, kept from the start, so that when the target raises, hangs or answers junk, the kit's worker
can say at which step and after how many adds; `play` creates its monitor inside.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from stallfree.spec import Arrival, Monitor, RuleViolation, StepFacts, Workload, work_bound

PROGRESS = "PROGRESS"


@dataclass(slots=True)
class PlayCounts:
    steps: int = 0
    adds: int = 0
    stopped_at_bound: bool = False


class Player:
    """One run. Keeps the monitor so that, when the run ends in an exception, the step is known."""

    def __init__(
        self, workload: Workload, factory: Callable[..., Any], rules: Iterable[str] | None = None,
        on_add: Callable[[Arrival, bool], None] | None = None, on_step: Callable[[StepFacts], None] | None = None,
    ) -> None:
        self.workload = workload
        self.factory = factory
        self.rules = None if rules is None else tuple(rules)
        self.monitor: Monitor | None = None
        self.on_add = on_add
        self.on_step = on_step

    @property
    def step(self) -> int:
        return 0 if self.monitor is None else self.monitor.shadow.step

    def play(self) -> PlayCounts:
        """Raises RuleViolation on the first broken rule; returns the counts when every rule held."""
        cfg = self.workload.config
        scheduler = self.factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
        monitor = self.monitor = Monitor(scheduler, cfg, self.rules)
        checks_progress = any(r.id == PROGRESS for r in monitor.rules)
        arrivals = sorted(self.workload.requests, key=lambda a: a.arrival_step)  # stable: list order
        bound = work_bound(self.workload)
        counts = PlayCounts()
        i = 0
        while True:
            step = monitor.shadow.step
            while i < len(arrivals) and arrivals[i].arrival_step <= step:
                a = arrivals[i]
                accepted = monitor.add(a.rid, a.prompt_len, a.max_new)
                if self.on_add is not None:
                    self.on_add(a, accepted)
                i += 1
            if i == len(arrivals) and monitor.is_idle:
                break
            if step >= bound:
                if checks_progress:
                    pending = len(monitor.shadow.waiting) + len(monitor.shadow.running)
                    message = f"{pending} request(s) still pending after {step} steps; all work fits in {bound}"
                    raise RuleViolation(PROGRESS, step, message)
                counts.stopped_at_bound = True
                break
            facts = monitor.step()
            if self.on_step is not None:
                self.on_step(facts)
        counts.steps = monitor.num_steps
        counts.adds = monitor.num_adds
        return counts


def check_workload(workload: Workload, factory: Callable[..., Any], rules: Iterable[str] | None = None) -> PlayCounts:
    """Play `workload` through a fresh `factory(token_budget=, max_seqs=, kv_tokens=)`, checking `rules`
    (all when None). Raises RuleViolation naming the first broken rule. What pasted counterexamples call."""
    return Player(workload, factory, rules).play()
