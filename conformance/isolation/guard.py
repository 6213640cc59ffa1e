"""The scheduler under test, behind a guard: every call has a timeout, every exception is recorded
with the call that raised it, and whatever a call returns is read under the same timeout.

Runs in the worker process's main thread: the timeout is an `Alarm` (SIGALRM), which stops Python
code, including a busy loop. Code stuck in C without releasing the interpreter is stopped from outside,
by the parent's per-run watchdog (see `worker`).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from itertools import islice
from typing import Any

from stallfree.spec import PROTOCOL, Config, RuleViolation, supports
from stallfree.spec.utils.alarm import Alarm

from . import forked

MAX_ENTRIES = 1_000_000  # a plan or an emitted list longer than this is junk, not a step
PROTOCOL_METHODS = ("add", "schedule", "complete")


class JunkReturn(Exception):
    """The target returned something no reading of the plain protocol allows (a PROTOCOL violation)."""


class CallTimeout(BaseException):
    """A call to the target ran past its timeout. A BaseException, so `except Exception` in the
    target does not swallow it."""


def target_traceback(error: BaseException) -> str:
    """The traceback from the target's frames on (the guard's own frame left out)."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, tb))


class Guard:
    """Speaks the plain protocol to the monitor on behalf of the target. Each call is timed by `alarm`
    (its countdown rearmed at the call and stopped after it), which the caller holds over the run."""

    def __init__(self, alarm: Alarm) -> None:
        self.alarm = alarm
        self.call = ""  # the call in progress, or the last one made
        self.error: BaseException | None = None  # the last exception that came out of the target
        self.target: Any = None
        self._raw_plan: object = None
        self.free_kv_shown: bool | None = None  # None until a step is done; then: an int every time
        self.stallfree_capabilities: frozenset[str] = frozenset()  # the target's (see capability.supports)

    def start(self, factory: Callable[..., Any], config: Config) -> Guard:
        """Make the scheduler under test and check that it has the protocol's three methods."""
        self.target = self._call(
            f"factory(token_budget={config.token_budget}, max_seqs={config.max_seqs}, kv_tokens={config.kv_tokens})",
            factory, token_budget=config.token_budget, max_seqs=config.max_seqs, kv_tokens=config.kv_tokens,
        )
        if isinstance(self.target, type):  # `return Scheduler`, not `return Scheduler(...)`
            raise RuleViolation(PROTOCOL, 0, f"the factory returned the class {self.target.__qualname__} itself, "
                                             "not a scheduler: name the class, or have the factory call it")
        for name in PROTOCOL_METHODS:
            method = self._call(f"getattr(scheduler, {name!r})", getattr, self.target, name, None)
            if not callable(method):
                raise RuleViolation(
                    PROTOCOL, 0, f"the factory returned {type(self.target).__name__}, which has no {name}() method"
                )
        self.stallfree_capabilities = self._call("reading the target's methods", supports, self.target)
        return self

    def _call(self, label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.call = label
        self.alarm.rearm()
        try:
            return fn(*args, **kwargs)
        except CallTimeout:
            raise
        except BaseException as error:
            self.error = error
            raise
        finally:
            self.alarm.stop()
            if forked.IN_CHILD:  # the target forked and this is the copy: it ends here, unheard
                forked.end_copy()

    # -- the plain protocol, guarded --------------------------------------------------------------------

    def add(self, rid: object, prompt_len: object, max_new: object, *priority: object) -> None:
        args = (rid, prompt_len, max_new, *priority)  # a priority only under a priority contract
        self._call(f"add({', '.join(map(repr, args))})", self.target.add, *args)

    def set_budget(self, token_budget: object) -> None:
        """Only under a budget-change contract; a target without it is told by the monitor (PROTOCOL)."""
        method = self._call("getattr(scheduler, 'set_budget')", getattr, self.target, "set_budget")
        self._call(f"set_budget({token_budget!r})", method, token_budget)

    def schedule(self) -> object:
        return self._call("schedule()", self._schedule)

    def complete(self, plan: object, stopped: object = None) -> object:
        call = "complete(plan)" if stopped is None else f"complete(plan, stopped={stopped!r:.80})"
        return self._call(call, self._complete, stopped)

    # A call and the read of what it returned are two stretches of the countdown, each with the whole
    # timeout, run in one guarded call (each guarded call costs more than the scheduler's own step).

    def _schedule(self) -> object:
        plan = self._raw_plan = self.target.schedule()
        self.alarm.rearm()
        return self._read(plan, "schedule()", _entry)

    def _complete(self, stopped: object) -> object:
        if stopped is None:
            emitted = self.target.complete(self._raw_plan)
        else:
            emitted = self.target.complete(self._raw_plan, stopped)
        self.call = "complete(plan)"
        self.alarm.rearm()
        return self._read(emitted, "complete()", _same)

    def cancel(self, rid: object) -> None:
        self._call(f"cancel({rid!r})", self.target.cancel, rid)

    @property
    def free_kv(self) -> object:
        """The target's own free KV, if it shows one (rule KV compares it); read as part of complete()."""
        value = self._call(self.call, getattr, self.target, "free_kv", None)
        self.free_kv_shown = (self.free_kv_shown is not False) and type(value) is int
        return value

    # -- reading what the target returned -----------------------------------------------------------------

    @staticmethod
    def _read(value: object, call: str, read_item: Callable[[object], object]) -> object:
        """A list of `value`'s items (plan entries as tuples), so the monitor never runs target code. A
        value that is not iterable is handed on as is, for the monitor to report."""
        try:
            iterator = iter(value)  # type: ignore[call-overload]
        except TypeError:
            return value
        items = list(islice(iterator, MAX_ENTRIES + 1))  # what the target's iterator raises is its crash
        if len(items) > MAX_ENTRIES:
            raise JunkReturn(f"{call} returned more than {MAX_ENTRIES} items")
        return [read_item(item) for item in items]


def _same(item: object) -> object:
    return item


def _entry(item: object) -> object:
    if type(item) is tuple:
        return item
    try:
        return tuple(islice(item, 3))  # type: ignore[call-overload]
    except TypeError:
        return item
