"""The design's monitor beside a scheduler that drives a real engine, every step.

`Live` is what the vLLM scheduler class talks to: add, plan, complete, cancel, in the contract's
words (int rids, a plan of (rid, n) entries). Each call goes through the design's monitor
(`stallfree.spec.registry`), which judges it against every rule of the design's registry.

A violation is reported with its step and rule. By default (`on_violation="stop"`) it raises
`MonitorStop` from the call that found it: from plan(), before the plan reaches the engine. With
`on_violation="log"` it is logged and the run goes on with the monitor detached, since its shadow no
longer follows the scheduler: the rules read BROKEN (the one broken) and not judged (the rest) from
that step on, never holds.

The cost of the monitor is measured per step: the time of the monitored calls less the time the
scheduler itself spent in them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from stallfree.spec import registry
from stallfree.spec.errors import RuleViolation
from stallfree.spec.types import Config
from stallfree.spec.verdict import Verdict

from .timed import Timed

LOG = logging.getLogger("stallfree.serving")
ON_VIOLATION = ("stop", "log")


class MonitorStop(RuntimeError):
    """The monitor found a broken rule: the engine stops before the plan runs."""

    def __init__(self, violation: RuleViolation) -> None:
        super().__init__(f"stallfree monitor: rule {violation.rule} broken at step {violation.step}: "
                         f"{violation.message}; the engine stops before this plan runs")
        self.violation = violation


@dataclass(slots=True)
class Costs:
    """Nanoseconds a step: the scheduler's own calls, and the monitor's checks around them."""

    scheduler_ns: list[int] = field(default_factory=list)
    monitor_ns: list[int] = field(default_factory=list)

    def median_us(self, which: str) -> float | None:
        values = sorted(getattr(self, f"{which}_ns"))
        return values[len(values) // 2] / 1000 if values else None


class Live:
    """`scheduler` (of `design`) under its monitor, in a running engine."""

    def __init__(self, scheduler: Any, config: Config, design: str, on_violation: str = "stop",
                 monitored: bool = True) -> None:
        designs = {d.name: d for d in registry.designs()}
        if design not in designs:
            raise ValueError(f"design {design!r} is unknown; the designs are {', '.join(designs)}")
        contract = designs[design]
        if on_violation not in ON_VIOLATION:
            raise ValueError(f"on_violation must be one of {', '.join(ON_VIOLATION)}, got {on_violation!r}")
        self.design = design
        self.on_violation = on_violation
        self.scheduler = Timed(scheduler)
        self.contract = contract
        self.monitor: Any = contract.watch(self.scheduler, config) if monitored else None
        self.monitored = monitored
        self.violations: list[RuleViolation] = []
        self.detached_at: int | None = None  # the step the monitor was detached at (log mode)
        self.costs = Costs()
        self.num_steps = 0
        self.num_stops = 0  # requests ended on their token (complete()'s stopped), as handed to the design
        self.num_cancels = 0
        self._step_ns = 0  # the monitored calls' time in the current step
        self.pending = False  # a plan was given and has not completed

    # -- the protocol, through the monitor ----------------------------------------------------

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        """Queue a request; raise ValueError, naming it, if the design refuses it."""
        if self.monitor is None:
            self.scheduler.add(rid, prompt_len, max_new)
            return
        accepted = self._judged(self.monitor.add, rid, prompt_len, max_new)
        if accepted is False:
            why = self.monitor.refusal(rid, prompt_len, max_new)
            raise ValueError(f"stallfree's {self.design} scheduler refuses request {rid} "
                             f"(prompt_len={prompt_len}, max_new={max_new}): {why}")

    def cancel(self, rid: int) -> None:
        self.num_cancels += 1
        if self.monitor is None:
            self.scheduler.cancel(rid)
        else:
            self._judged(self.monitor.cancel, rid)

    def plan(self) -> Any:
        """The next plan, judged before it is returned (before it runs)."""
        self._step_ns = 0
        self.scheduler.reset()
        if self.monitor is None:
            self.pending = True
            return self.scheduler.schedule()
        self._judged(self.monitor.plan)
        self.pending = True
        return self.scheduler.last_plan

    def complete(self, stopped: Iterable[int]) -> tuple[int, ...]:
        """The pending plan ran; `stopped` ended on their token. Returns the rids that emitted a token."""
        stopped = tuple(stopped)
        self.num_stops += len(stopped)
        if self.monitor is None:
            emitted = self.scheduler.complete(self.scheduler.last_plan, stopped)
        else:
            self._judged(self.monitor.complete, stopped)
            emitted = self.scheduler.last_emitted
        self.pending = False
        self.num_steps += 1
        self.costs.scheduler_ns.append(self.scheduler.spent_ns)
        if self.monitored and self.detached_at is None:
            self.costs.monitor_ns.append(max(self._step_ns - self.scheduler.spent_ns, 0))
        return tuple(emitted)

    def _judged(self, call: Any, *args: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return call(*args)
        except RuleViolation as violation:
            self.violations.append(violation)
            if self.on_violation == "stop":
                raise MonitorStop(violation) from None
            LOG.error("stallfree monitor: rule %s broken at step %d: %s; logged, the run goes on unmonitored",
                      violation.rule, violation.step, violation.message)
            self.detached_at = violation.step
            self.monitor = None
            return None
        finally:
            self._step_ns += time.perf_counter_ns() - start

    # -- the verdicts -------------------------------------------------------------------------

    def verdicts(self) -> dict[str, Verdict]:
        """Each rule of the design's registry: holds only where it was judged on every step so far."""
        ids = list(self.contract.ids)
        if not self.monitored:
            return dict.fromkeys(ids, Verdict.NOT_CHECKED)
        broken = {v.rule for v in self.violations}
        out = {}
        for rule_id in ids:
            if rule_id in broken:
                out[rule_id] = Verdict.BROKEN
            elif self.detached_at is not None:
                out[rule_id] = Verdict.NOT_JUDGED
            elif rule_id == "PROGRESS" and not self.monitor.is_idle:
                out[rule_id] = Verdict.NOT_JUDGED  # requests still live: whether each ends is not yet known
            else:
                out[rule_id] = Verdict.HOLDS
        return out

    def summary(self) -> dict[str, Any]:
        """The verdicts, the violations and the costs, as JSON values."""
        return {
            "design": self.design, "steps": self.num_steps, "monitored": self.monitored,
            "stops": self.num_stops, "cancels": self.num_cancels,
            "rules": {rule: {"verdict": verdict.value} for rule, verdict in self.verdicts().items()},
            "violations": [{"rule": v.rule, "step": v.step, "message": v.message} for v in self.violations],
            "scheduler_us_per_step": self.costs.median_us("scheduler"),
            "monitor_us_per_step": self.costs.median_us("monitor"),
        }

    def report(self) -> str:
        """One line: steps judged, each rule's verdict, and the per-step costs."""
        verdicts = ", ".join(f"{rule} {verdict.label}" for rule, verdict in self.verdicts().items())
        sched, mon = self.costs.median_us("scheduler"), self.costs.median_us("monitor")
        cost = f"scheduler {sched:.1f} us/step" if sched is not None else "no step"
        if mon is not None:
            cost += f", monitor {mon:.1f} us/step (medians)"
        return f"stallfree {self.design} design, {self.num_steps} steps: {verdicts}; {cost}"
