"""A scheduler driven through the monitor: the simulation stops at the first broken rule."""

from __future__ import annotations

from operator import is_
from typing import Any

from stallfree.conformance.trace.cleanstep_v1 import usable
from stallfree.spec import Config, InvalidField, Plan, registry

from .cleansteps import Decodes


class Checked:
    """Speaks the plain protocol; forwards each call through a `Monitor` judging every rule (of
    `contract`, the reservation design's unless given: a variant's passes set_budget and priorities too).
    With the reservation design's own monitor, a step is judged by the shortcut (`cleansteps.Decodes`: decodes,
    chunks, admissions, ends by the last token) unless `shortcut` is False; a step it declines (any break, a stop),
    by the monitor.

    The step a long simulation takes most, the same plan of decodes alone again (`Decodes.judged`: the same
    entry objects on the same ready set, the waiting line as long, no request due its last token) and the plan's
    own rid objects emitted with the shadow's free KV shown, is judged here without a call into the shortcut:
    the same tests `Decodes.planned` and `Decodes.done` make on that step, in the same order of outcome."""

    def __init__(self, scheduler: Any, config: Config, contract: Any = None, shortcut: bool = True) -> None:
        self.monitor = (contract or registry.RESERVATION).watch(scheduler, config)
        self.fast = Decodes(self.monitor) if shortcut and usable(self.monitor) else None
        self.taken: object = None  # a plan the shortcut took, until complete()
        self.again = False  # whether `taken` is `fast.judged` again (the step judged here)
        self.shadow = self.monitor.shadow  # the monitor's, for the life of the monitor
        self.plan_next = scheduler.schedule  # the scheduler's own calls, looked up once
        self.run_plan = scheduler.complete
        if self.fast is None:
            self.schedule = self.monitor.plan  # the monitor's own: one call a step fewer

    def schedule(self) -> object:  # type: ignore[no-redef]
        """The next plan, judged before it runs: here (the same plan of decodes alone again), by the shortcut
        if it takes it, else by the monitor."""
        monitor, fast, shadow = self.monitor, self.fast, self.shadow
        if self.taken is not None:
            raise RuntimeError("Monitor.plan() called twice without complete()")  # as the monitor raises it
        if monitor._pending is not None or shadow.kv_owed:
            fast.sync()  # type: ignore[union-attr]  # not None: `schedule` is the monitor's otherwise
            return monitor.plan()  # raises as the monitor does (twice without complete()), or judges what is owed
        plan = self.plan_next()
        judged = fast.judged  # type: ignore[union-attr]
        if judged is not None and type(plan) is Plan:
            items = plan.entries
            if len(items) == len(judged) and len(shadow.waiting) == fast.waits and not shadow.prefilling and \
                    fast.lag not in fast.calendar and all(map(is_, items, judged)):  # type: ignore[union-attr]
                self.taken, self.again = plan, True
                return plan
        if fast.planned(plan):  # type: ignore[union-attr]
            self.taken, self.again = plan, False
            return plan
        fast.sync()  # type: ignore[union-attr]
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
        if stopped:  # a stop: the monitor judges the step whole (the plan's judgement raises nothing: shown)
            fast.sync()  # type: ignore[union-attr]
            monitor.judged(taken)
            return monitor.complete(stopped).emitted
        emitted = self.run_plan(taken)
        free_kv = getattr(monitor.scheduler, "free_kv", None)
        if self.again and type(emitted) is tuple and len(emitted) == len(fast.rids) and type(free_kv) is int and \
                free_kv == self.shadow.free_kv and all(map(is_, emitted, fast.rids)):  # type: ignore[union-attr]
            fast.take_decodes()  # type: ignore[union-attr]  # `Decodes.done` on this step, which says yes
            return emitted
        if fast.done(emitted, free_kv):  # type: ignore[union-attr]
            return emitted  # a list or tuple of ints (shown), as the simulator reads it
        fast.sync()  # type: ignore[union-attr]
        monitor.judged(taken)
        return monitor.completed(emitted).emitted
