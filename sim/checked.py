"""A scheduler driven through the monitor: the simulation stops at the first broken rule."""

from __future__ import annotations

from typing import Any

from stallfree.conformance.trace.cleanstep_v1 import usable
from stallfree.spec import Config, InvalidField, registry

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
        if self.fast is None:
            self.schedule = self.monitor.plan  # the monitor's own: one call a step fewer

    def schedule(self) -> object:  # type: ignore[no-redef]
        """The next plan, judged before it runs: by the shortcut if it takes it, else by the monitor."""
        monitor, fast = self.monitor, self.fast
        assert fast is not None
        if self.taken is not None:
            raise RuntimeError("Monitor.plan() called twice without complete()")  # as the monitor raises it
        if monitor._pending is not None or monitor.shadow.kv_owed:
            fast.sync()
            return monitor.plan()  # raises as the monitor does (twice without complete()), or judges what is owed
        plan = monitor.scheduler.schedule()
        if fast.planned(plan):
            self.taken = plan
            return plan
        fast.sync()
        return monitor.judged(plan)

    def add(self, rid: int, prompt_len: int, max_new: int, *priority: int) -> None:
        if not self.monitor.add(rid, prompt_len, max_new, *priority):
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
        monitor, fast = self.monitor, self.fast
        assert fast is not None
        if stopped:  # a stop: the monitor judges the step whole (the plan's judgement raises nothing: shown)
            fast.sync()
            monitor.judged(taken)
            return monitor.complete(stopped).emitted
        emitted = monitor.scheduler.complete(taken)
        if fast.done(emitted, getattr(monitor.scheduler, "free_kv", None)):
            return emitted  # a list or tuple of ints (shown), as the simulator reads it
        fast.sync()
        monitor.judged(taken)
        return monitor.completed(emitted).emitted
