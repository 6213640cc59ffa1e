"""A watchdog over a user's scheduler that must stay in this process: prove's model check copies its
objects and reads their state, so it cannot be hosted elsewhere (`hosting`). Each protocol call of a
scheduler the factory makes is timed by one SIGALRM countdown (`Watch`); one that runs past the limit in
Python code (a loop, a sleep) is stopped there as `CallHung`, naming the call. A call stuck in C is not
reached by a signal: `trace` and `simulate` host the scheduler in its own process for that, and prove's
work runs in a child that a watchdog outside it ends (`supervised`), each call marked on its `Board`."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from stallfree.conformance.isolation.remote import CallHung
from stallfree.proofs.pass_through import pass_through
from stallfree.spec.utils.alarm import Alarm

from .supervised import Board

TIMED = ("add", "schedule", "complete", "cancel", "set_budget")


class Watch:
    """One countdown for every call of the schedulers `timed` makes; enter it around the run."""

    def __init__(self, seconds: float, board: Board | None = None) -> None:
        self.seconds = seconds
        self.board = board  # where a watchdog outside the process sees each call in progress (`supervised`)
        self.call = ""
        self.alarm = Alarm(seconds, self._hung, counting=False)
        self._classes: dict[type, type] = {}

    def _hung(self) -> BaseException:
        return CallHung(self.message(self.call))

    def message(self, call: str) -> str:
        return f"{call} did not return within {self.seconds:g} s (--timeout)"

    def __enter__(self) -> Watch:
        self.alarm.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.alarm.__exit__(*exc)

    def timed(self, factory: Callable[..., Any]) -> Callable[..., Any]:
        """`factory`, each scheduler it makes turned into a subclass of its own class that times each call
        (its state, name and methods otherwise the same, so copies and state reads see the scheduler). A
        class stays a class (the timed subclass), so the code theorems can still build its state."""
        if isinstance(factory, type):
            with contextlib.suppress(TypeError):  # a class that takes no subclass: timed through `make`
                return self._timed_class(factory)

        def make(**config: int) -> Any:
            made = factory(**config)
            with contextlib.suppress(TypeError):  # a layout that takes no subclass (a builtin): left untimed
                made.__class__ = self._timed_class(type(made))
            return made

        return functools.update_wrapper(make, factory)  # its name and declared design the factory's

    def _timed_class(self, cls: type) -> type:
        if cls not in self._classes:
            methods = {name: self._wrap(name, getattr(cls, name))
                       for name in TIMED if callable(getattr(cls, name, None))}
            self._classes[cls] = type(cls.__name__, (cls,), {"__slots__": (), "__qualname__": cls.__qualname__,
                                                              "__module__": cls.__module__, **methods})
        return self._classes[cls]

    def _wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(scheduler: Any, *args: Any, **kwargs: Any) -> Any:
            self.call = f"{name}()"
            if self.board is not None:
                self.board.started(self.call)
            self.alarm.rearm()
            try:
                return method(scheduler, *args, **kwargs)
            finally:
                self.alarm.stop()
                if self.board is not None:
                    self.board.ended()

        call.__name__ = name
        call.__wrapped__ = method  # type: ignore[attr-defined]  # the signature capability.supports reads
        return pass_through(call)  # the proofs read the method it times (FOLD (code, induction, any N))
