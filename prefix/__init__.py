"""The prefix-caching design of stallfree: the paged design with full blocks kept, keyed by their
tokens and the prefix before them, shared by reference count, and evicted least recently freed
first. Its scheduler is `scheduler`; its contract (block keys, rules, shadow, monitor, invariants)
`contract`, which imports only the spec so the design registry can name it; its faults `faults`.
See docs/prefix.md.

`Scheduler`, `small_blocks` and `PrefixPlan` are loaded on first use, so that importing the contract
(as the registry in `stallfree.spec.registry` does) does not load the schedulers."""

from __future__ import annotations

from typing import Any

__all__ = ["PrefixPlan", "Scheduler", "small_blocks"]


def __getattr__(name: str) -> Any:
    if name in ("Scheduler", "small_blocks"):
        from . import scheduler

        return getattr(scheduler, name)
    if name == "PrefixPlan":
        from .plan import PrefixPlan

        return PrefixPlan
    raise AttributeError(f"module 'stallfree.prefix' has no attribute {name!r}")
