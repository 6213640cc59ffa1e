"""The plain protocol's schedule() and complete() of a checked simulation with the shortcut (`cleansteps.Decodes`).

One call each a step between the simulator and the scheduler, and the step a long simulation takes most judged in
the call itself: the plan of decodes alone shown clean last (`Decodes.judged`) again. Its entries are the same
objects (immutable pairs: the same plan), on the state it was shown to fit on (`fits`: since then only such steps
were taken and no request became the waiting head); with a request due its last token, the step's completion is
`Decodes._done_tail`'s; with none, complete() returns the plan's own rid objects, in its order (so the ready rids,
each once, ints: shown), with the shadow's free KV shown, and the step is taken by one more step of lag. Any other
plan goes to `Decodes.planned`, its completion to `Decodes.done`; a step they decline, to the monitor, on the same
account (`sync`): `Monitor.judged` before the plan runs, or, with the plan taken, `Monitor.judged` and
`Monitor.completed` once it ran. So a verdict is the one the monitor gives
(tests/test_checked_shortcut.py).
"""

from __future__ import annotations

from operator import is_
from typing import Any

from stallfree.spec import Plan

from .cleansteps import Decodes
from .cleantail import Tail


class Calls(Decodes):
    """schedule() and complete() for one checked simulation (the reservation design's own monitor: `usable`)."""

    __slots__ = ("plan_next", "run_plan", "scheduler", "taken")

    def __init__(self, monitor: Any) -> None:
        super().__init__(monitor)
        self.scheduler = monitor.scheduler
        self.plan_next = self.scheduler.schedule  # the scheduler's own calls, looked up once
        self.run_plan = self.scheduler.complete
        self.taken: object = None  # a plan the shortcut took, until complete()

    def schedule(self) -> object:
        """The next plan, judged before it runs: here if it is the plan of decodes alone shown clean last, again;
        else by `planned`; else by the monitor."""
        if self.taken is not None:
            raise RuntimeError("Monitor.plan() called twice without complete()")  # as the monitor raises it
        judged = self.judged
        if judged is not None and self.fits:  # so the last step was taken here: no plan pending, no KV owed
            plan = self.plan_next()
            items: Any = plan.entries if type(plan) is Plan else plan
            if (type(items) is tuple or type(items) is list) and len(items) == len(judged) and \
                    all(map(is_, items, judged)):
                self.taken = plan
                if self.lag in self.calendar:  # requests due their last token: `_done_tail` judges them ending
                    self.clean = self._due_in(Tail(len(judged)))
                return plan
        else:
            monitor = self.monitor
            if monitor._pending is not None or self.shadow.kv_owed:
                self.sync()
                return monitor.plan()  # raises as the monitor does (twice without complete()), or judges what is owed
            plan = self.plan_next()
        if self.planned(plan):
            self.taken = plan
            return plan
        self.sync()
        return self.monitor.judged(plan)

    def complete(self, plan: object, stopped: list[int] | tuple[int, ...] = ()) -> list[int] | tuple[int, ...]:
        """Run the plan taken (`taken`; the monitor's pending one otherwise) and judge what it returned: here if the
        plan is decodes alone and complete() returned its own rid objects, in its order, with the shadow's free KV
        shown; else by `done`; else by the monitor."""
        taken = self.taken
        if taken is None:
            return self.monitor.complete(stopped).emitted
        self.taken = None
        if stopped:  # a stop: the monitor judges the step whole (the plan's judgement raises nothing: shown)
            self.sync()
            self.monitor.judged(taken)
            return self.monitor.complete(stopped).emitted
        emitted = self.run_plan(taken)
        free_kv = getattr(self.scheduler, "free_kv", None)
        if self.clean is None:  # decodes alone, none due its last token
            rids = self.rids
            if (type(emitted) is tuple or type(emitted) is list) and len(emitted) == len(rids) and \
                    all(map(is_, emitted, rids)) and type(free_kv) is int and free_kv == self.shadow.free_kv:
                self.lag += 1  # `take_decodes`
                return emitted  # a list or tuple of ints (shown), as the simulator reads it
        if self.done(emitted, free_kv):
            return emitted
        self.sync()
        monitor = self.monitor
        monitor.judged(taken)
        return monitor.completed(emitted).emitted
