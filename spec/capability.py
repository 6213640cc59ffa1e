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
# Kept with the code and defaults it was read from, so a function given new ones is read again.
_BINDS: weakref.WeakKeyDictionary[Any, tuple[Any, Any, Any, int, bool]] = weakref.WeakKeyDictionary()


def _binds(function: Any, num_args: int) -> bool:
    """Whether `function` takes `num_args` positional arguments (a method's are after self)."""
    func = function.__func__ if type(function) is types.MethodType else None
    if type(func) is not types.FunctionType or "__signature__" in func.__dict__ or "__wrapped__" in func.__dict__:
        return _signature_binds(function, num_args)
    code, defaults, kwdefaults = func.__code__, func.__defaults__, func.__kwdefaults__
    known = _BINDS.get(func)
    if known is not None and known[0] is code and known[1] is defaults and known[2] is kwdefaults \
            and known[3] == num_args:
        return known[4]
    binds = _signature_binds(function, num_args)
    _BINDS[func] = (code, defaults, kwdefaults, num_args, binds)
    return binds


def _signature_binds(function: Any, num_args: int) -> bool:
    try:
        inspect.signature(function).bind(*([None] * num_args))
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): assume the plain protocol only
        return False
    return True
