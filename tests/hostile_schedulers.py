"""Schedulers that attack the checker instead of scheduling: they raise, hang, end the process, return
garbage or endless iterables. The hostile-input tests load them as `hostile_schedulers:NAME` (this
folder is on sys.path under pytest, and on PYTHONPATH for the subprocess cases)."""

from __future__ import annotations

import itertools
import os
import sys
import time
from typing import Any, ClassVar

from stallfree.reference import Scheduler


class RaisesInSchedule(Scheduler):
    def schedule(self) -> Any:
        raise RuntimeError("schedule exploded")


class RaisesInComplete(Scheduler):
    def complete(self, plan: Any) -> Any:
        raise RuntimeError("complete exploded")


class Endless:
    """An endless sequence of (0, 1): each look a fresh iterator (a one-shot one is PROTOCOL by itself)."""

    def __iter__(self) -> Any:
        return itertools.repeat((0, 1))


class EndlessPlan(Scheduler):
    def schedule(self) -> Any:
        super().schedule()
        return Endless()


class EndlessEmitted(Scheduler):
    def complete(self, plan: Any) -> Any:
        super().complete(plan)
        return itertools.repeat(0)


class GarbagePlan(Scheduler):
    def schedule(self) -> Any:
        return [("a", None)]


class ExitsInSchedule(Scheduler):
    def schedule(self) -> Any:
        os._exit(0)  # a status of 0, to show it is not read as a pass


class SysExitInSchedule(Scheduler):
    def schedule(self) -> Any:
        sys.exit(0)


class HangsInSchedule(Scheduler):
    def schedule(self) -> Any:
        time.sleep(3600)


class TextFreeKV(Scheduler):
    @property  # type: ignore[override]
    def free_kv(self) -> Any:
        return "plenty"


class NotProtocol:
    def __init__(self, **config: int) -> None:
        self.config = config


def factory_raises(**config: int) -> Any:
    raise ValueError("no scheduler today")


def returns_int(**config: int) -> Any:
    return 42


class DeclaresKvNotApplicable(Scheduler):
    """Keeps every rule, and declares KV not applicable to it: the kit must say so, not read it holds."""

    stallfree_not_applicable: ClassVar[dict[str, str]] = {"KV": "it pages its KV: it reserves nothing up front"}


class BreaksLate(Scheduler):
    """The reference until step 2,000, where it plans one token past the budget (BUDGET)."""

    LATE = 2_000

    def schedule(self) -> Any:
        plan = super().schedule()
        if self.num_steps == self.LATE and plan:
            rid, n = plan[0]
            plan = [(rid, n + self.config.token_budget), *plan[1:]]
        return plan


def returns_the_class(**config: int) -> Any:
    """A factory that forgot to call: it returns the class, not a scheduler."""
    return Scheduler



def drop_a_ctrl_c() -> None:
    """A real SIGINT taken inside a weakref callback: CPython drops the KeyboardInterrupt raised there
    ("Exception ignored in ..."), as it does when a Ctrl-C lands in the import system's clean-up."""
    import signal
    import weakref

    class Target:
        pass

    target = Target()
    ref = weakref.ref(target, lambda _: signal.raise_signal(signal.SIGINT))
    del target  # the callback runs here, takes the SIGINT, and its KeyboardInterrupt is dropped
    assert ref() is None


def drops_ctrl_c_at_its_first_step(waits: int) -> None:
    """The reference scheduler, in this process, made to drop a Ctrl-C at its first step and then wait
    `waits` sleeps of 10 ms (for the interrupt to come again) before it plans as before."""
    original = Scheduler.schedule

    def schedule(self: Scheduler) -> Any:
        if self.num_steps == 0:
            drop_a_ctrl_c()
            for _ in range(waits):
                time.sleep(0.01)
        return original(self)

    Scheduler.schedule = schedule  # type: ignore[method-assign]
