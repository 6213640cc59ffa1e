"""What a scheduler supports beyond the plain protocol: stops and cancels.

The plain protocol is add(), schedule() and complete(plan). Two capabilities extend it:

- "stop": complete(plan, stopped) takes the rids whose token in this step ended them;
- "cancel": cancel(rid) takes a request away.

A scheduler without one is not broken: the checks that need it are skipped and listed as not
supported (the way an optional test is reported), never judged.
"""

from __future__ import annotations

import inspect
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


def _binds(function: Any, num_args: int) -> bool:
    try:
        inspect.signature(function).bind(*([None] * num_args))
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): assume the plain protocol only
        return False
    return True
