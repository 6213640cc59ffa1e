"""What a scheduler supports beyond the plain protocol: stops and cancels.

The plain protocol is add(), schedule() and complete(plan). Two capabilities extend it:

- "stop": complete(plan, stopped) takes the rids whose token in this step ended them;
- "cancel": cancel(rid) takes a request away.

A scheduler without one is not broken: the checks that need it are skipped and listed as not
supported (the way an optional test is reported), never judged.
"""

from __future__ import annotations

import inspect
import types
import weakref
from typing import Any

STOP = "stop"
CANCEL = "cancel"
CAPABILITIES = (STOP, CANCEL)


class Unsupported(Exception):
    """The scheduler lacks a capability a check needs. `capability` is STOP or CANCEL."""

    def __init__(self, capability: str, scheduler: object) -> None:
        what = {STOP: "its complete() takes no second argument (stopped)", CANCEL: "it has no cancel(rid) method"}
        name = getattr(scheduler, "stallfree_name", None) or type(scheduler).__name__  # a wrapper names its target
        super().__init__(f"{name} does not support {capability!r}: {what[capability]}")
        self.capability = capability


def supports(scheduler: Any) -> frozenset[str]:
    """The capabilities `scheduler` has, read off its methods' signatures (never by calling them). A
    wrapper that forwards to another scheduler declares the other's instead, as a frozenset in its
    `stallfree_capabilities` attribute."""
    declared = getattr(scheduler, "stallfree_capabilities", None)
    if isinstance(declared, frozenset):
        return frozenset(c for c in declared if c in CAPABILITIES)
    found = set()
    complete = getattr(scheduler, "complete", None)
    if callable(complete) and _binds(complete, 2):
        found.add(STOP)
    if callable(getattr(scheduler, "cancel", None)):
        found.add(CANCEL)
    return frozenset(found)


# A plain function's bindability, by the function: the model checker asks once per cancel and stop of
# every copy of a scheduler (hundreds of thousands of times a prove), and `inspect.signature` is slow.
# Kept with the code and defaults it was read from, so a function given new ones is read again; a
# wrapper's (`__wrapped__`: prove's timed methods) with the wrapped function's too.
_BINDS: weakref.WeakKeyDictionary[Any, tuple[tuple[Any, ...], int, bool]] = weakref.WeakKeyDictionary()


def _binds(function: Any, num_args: int) -> bool:
    """Whether `function` takes `num_args` positional arguments (a method's are after self)."""
    func = function.__func__ if type(function) is types.MethodType else None
    if type(func) is not types.FunctionType or "__signature__" in func.__dict__:
        return _signature_binds(function, num_args)
    read_from = _read_from(func)
    if read_from is None:
        return _signature_binds(function, num_args)
    known = _BINDS.get(func)
    if known is not None and known[1] == num_args and len(known[0]) == len(read_from) \
            and all(a is b for a, b in zip(known[0], read_from, strict=True)):
        return known[2]
    binds = _signature_binds(function, num_args)
    _BINDS[func] = (read_from, num_args, binds)
    return binds


def _read_from(func: types.FunctionType) -> tuple[Any, ...] | None:
    """What `func`'s signature is read from: its code and defaults, and down its `__wrapped__` chain
    the same of each plain function (None where one is not plain: read again each time)."""
    parts: list[Any] = []
    for _ in range(8):  # a chain longer than this is read each time
        parts += [func, func.__code__, func.__defaults__, func.__kwdefaults__]
        wrapped = func.__dict__.get("__wrapped__")
        if wrapped is None:
            return tuple(parts)
        if type(wrapped) is not types.FunctionType or "__signature__" in wrapped.__dict__:
            return None
        func = wrapped
    return None


def _signature_binds(function: Any, num_args: int) -> bool:
    try:
        inspect.signature(function).bind(*([None] * num_args))
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): assume the plain protocol only
        return False
    return True
