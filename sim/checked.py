"""A scheduler driven through the monitor: the simulation stops at the first broken rule."""

from __future__ import annotations

from typing import Any

from stallfree.conformance.trace.cleanstep_v1 import usable
from stallfree.spec import Config, InvalidField, Request, registry
from stallfree.spec.reservation.monitor import plainly_accepted

from .cleansteps import Decodes


class Checked:
    """Speaks the plain protocol; forwards each call through a `Monitor` judging every rule (of
    `contract`, the reservation design's unless given: a variant's passes set_budget and priorities too).
    With the reservation design's own monitor, a step is judged by the shortcut (`cleansteps.Decodes`: decodes,
    chunks, admissions, ends by the last token) unless `shortcut` is False; a step it declines (any break, a stop),
    by the monitor."""

    def __init__(self, scheduler: Any, config: Config, contract: Any = None, shortcut: bool = True) -> None:
        self.monitor = (contract or registry.RESERVATION).watch(scheduler, config)
        self.fast = Decodes(self.monitor) if shortcut and usable(self.monitor) else None
        self.taken: object = None  # a plan the shortcut took, until complete()
        self.shadow = self.monitor.shadow  # the monitor's, for the life of the monitor
        self.plan_next = scheduler.schedule  # the scheduler's own calls, looked up once
        self.run_plan = scheduler.complete
        if self.fast is None:
            self.schedule = self.monitor.plan  # the monitor's own: one call a step fewer
        else:
            self.planned, self.done = self.fast.planned, self.fast.done  # looked up once

    def schedule(self) -> object:  # type: ignore[no-redef]
        """The next plan, judged before it runs: by the shortcut if it takes it, else by the monitor."""
        monitor = self.monitor
        if self.taken is not None:
            raise RuntimeError("Monitor.plan() called twice without complete()")  # as the monitor raises it
        if monitor._pending is not None or self.shadow.kv_owed:
            self.fast.sync()  # type: ignore[union-attr]  # not None: `schedule` is the monitor's otherwise
            return monitor.plan()  # raises as the monitor does (twice without complete()), or judges what is owed
        plan = self.plan_next()
        if self.planned(plan):
            self.taken = plan
            return plan
        self.fast.sync()  # type: ignore[union-attr]
        return monitor.judged(plan)

    def add(self, rid: int, prompt_len: int, max_new: int, *priority: int) -> None:
        """Offer a request through the monitor; one the contract plainly accepts (`plainly_accepted`) is judged
        by the monitor once offered (`Watch.offered`), its `Request` built once."""
        monitor = self.monitor
        if self.fast is not None and not priority and plainly_accepted(self.shadow, rid, prompt_len, max_new):
            accepted = monitor.offered(None, rid, prompt_len, max_new, Request(rid, prompt_len, max_new))
        else:
            accepted = monitor.add(rid, prompt_len, max_new, *priority)
        if not accepted:
            raise InvalidField(f"rid {rid}: refused by the scheduler, as the contract requires")

    def set_budget(self, token_budget: int) -> None:
        if self.fast is not None:
            self.fast.sync()
        if not self.monitor.set_budget(token_budget):  # type: ignore[attr-defined]
            raise InvalidField(f"token_budget {token_budget!r}: refused by the scheduler, as the contract requires")

    def complete(self, plan: object, stopped: list[int] | tuple[int, ...] = ()) -> list[int] | tuple[int, ...]:
        taken = self.taken
        if taken is None:
            return self.monitor.complete(stopped).emitted
        self.taken = None
        monitor = self.monitor
        if stopped:  # a stop: the monitor judges the step whole (the plan's judgement raises nothing: shown)
            self.fast.sync()  # type: ignore[union-attr]
            monitor.judged(taken)
            return monitor.complete(stopped).emitted
        emitted = self.run_plan(taken)
        if self.done(emitted, getattr(monitor.scheduler, "free_kv", None)):
            return emitted  # a list or tuple of ints (shown), as the simulator reads it
        self.fast.sync()  # type: ignore[union-attr]
        monitor.judged(taken)
        return monitor.completed(emitted).emitted
