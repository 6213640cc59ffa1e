"""Wrappers the proofs read through: a function whose code is registered here only calls its
`__wrapped__` with its own arguments and returns what that returns (the prove command's timer, say),
so that FOLD (code, induction, any N) reads the method it wraps (`smt.code_phases`). Kept free of z3
so that the command can register its wrapper without importing a solver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

REGISTERED: set[Any] = set()  # the code objects of pass-through wrappers


def pass_through(wrapper: Callable[..., Any]) -> Callable[..., Any]:
    """Register `wrapper`'s code as a pass-through (it calls its `__wrapped__` and returns its result)."""
    REGISTERED.add(wrapper.__code__)  # type: ignore[attr-defined]
    return wrapper


def unwrapped(func: Any) -> Any:
    """`func`, every registered wrapper around it taken off."""
    while getattr(func, "__code__", None) in REGISTERED and hasattr(func, "__wrapped__"):
        func = func.__wrapped__
    return func
