"""Loading a scheduler (or any factory) named MODULE:FACTORY, imported the way Python imports.

The one loader every layer uses: the CLI, the conformance kit, the simulator and the executor.
`name` is what the value was given as (a flag such as --scheduler, or "target"), so every error
names it and the value.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

from .alarm import expired


class TargetError(ValueError):
    """The target cannot be loaded: a bad MODULE:FACTORY, a failed import, an attribute not there."""


def split_target(target: str, name: str = "target") -> tuple[str, list[str]]:
    """'pkg.mod:Outer.Factory' -> ('pkg.mod', ['Outer', 'Factory']); raises TargetError naming the value."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr or "" in attr.split("."):
        raise TargetError(f"{name} {target!r}: expected MODULE:FACTORY, e.g. stallfree.reference:Scheduler")
    return module_name, attr.split(".")


def load_target(target: str, name: str = "target") -> Callable[..., Any]:
    """Import MODULE and return FACTORY from it. PYTHONPATH and the current directory are searched,
    as `python -m` would. Every failure is a TargetError that names `name`, the target and the cause."""
    module_name, path = split_target(target, name)
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        obj: Any = importlib.import_module(module_name)
    except BaseException as error:  # an import runs the target's code: anything may come out of it
        if isinstance(error, KeyboardInterrupt):
            raise
        why = f"{type(error).__name__}: {error}"
        raise TargetError(f"{name} {target!r}: importing {module_name} failed: {why}") from None
    for part in path:
        try:
            obj = getattr(obj, part)
        except Exception as error:
            raise TargetError(f"{name} {target!r}: {module_name} has no attribute {part!r} ({error})") from None
    if not callable(obj):
        raise TargetError(f"{name} {target!r}: {'.'.join(path)} is a {type(obj).__name__}, not callable")
    return obj  # type: ignore[no-any-return]


class FactoryError(Exception):
    """The scheduler's factory failed when called with the config: a bad --scheduler, not a broken rule."""


def guarded(factory: Callable[..., Any], target: str, flag: str = "--scheduler") -> Callable[..., Any]:
    """`factory`, its failure to build a scheduler turned into a FactoryError naming the flag and value
    (it is called later, inside the run, with token_budget=, max_seqs=, kv_tokens=)."""

    def make(**config: int) -> Any:
        try:
            made = factory(**config)
        except Exception as error:  # whatever a wrong factory raises, the argument is what is wrong
            if expired(error):  # but the run's own limit, reached while the factory ran, is the run's
                raise
            raise FactoryError(f"{flag} {target!r}: calling it with token_budget=, max_seqs=, kv_tokens= "
                               f"raised {type(error).__name__}: {error}") from None
        if isinstance(made, type):  # `return Scheduler`, not `return Scheduler(...)`: no rule is at fault
            raise FactoryError(f"{flag} {target!r}: calling it returned the class {made.__qualname__} itself, not "
                               f"a scheduler; name the class ({made.__module__}:{made.__qualname__}) or have the "
                               "factory call it")
        return made

    if hasattr(factory, "design"):  # the design the factory declares stays declared (spec.registry.of)
        make.design = factory.design  # type: ignore[attr-defined]
    return make


def import_line(target: str) -> tuple[str, str]:
    """The import statement and the expression naming FACTORY, for a pasteable test."""
    module_name, path = split_target(target)
    if len(path) == 1:
        return f"from {module_name} import {path[0]}", path[0]
    return f"import {module_name}", f"{module_name}.{'.'.join(path)}"
