"""Loading a learner's Python FILE and seeing what it really uses. The modules a submission may not
use are taken out of `sys.modules` while it is loaded and judged, so that any import of them, however
it is spelled (`from stallfree import reference`, `importlib.import_module("stallfree." + "reference")`,
an import inside `schedule()`), loads them anew and is found in `sys.modules` afterwards; then they are
put back as they were. And `Scheduler` must be written in FILE, not a name bound to stallfree's own."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stallfree.conformance.isolation.timeouts import LOAD_TIMEOUT_ENV, load_timeout
from stallfree.spec.utils.alarm import Alarm

from .base import AnswerError

FACTORY = "Scheduler"


class NotWritten(Exception):
    """FILE's Scheduler is not written in it: a wrong answer (graded so), not a file that cannot be read."""
# Imported before a submission loads, so that what they import themselves is not taken for the
# submission's: the contract and the policy in overridable steps, which exercise 4 starts from.
PRELOADED = ("stallfree.spec", "stallfree.variants")


@dataclass(slots=True)
class Watch:
    """The forbidden modules found imported while the watch was on."""

    forbidden: tuple[str, ...]
    found: list[str] = field(default_factory=list)


def _under(name: str, prefixes: Sequence[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@contextlib.contextmanager
def watched(forbidden: Sequence[str]) -> Iterator[Watch]:
    """While the block runs, the modules under `forbidden` are out of sys.modules (and off their parent
    packages); after it, those imported again are in `Watch.found`, and everything is put back."""
    for name in PRELOADED:
        importlib.import_module(name)
    watch = Watch(tuple(forbidden))
    saved = {name: module for name, module in sys.modules.items() if _under(name, forbidden)}
    parents = {}
    for name in forbidden:
        parent, _, child = name.rpartition(".")
        holder = sys.modules.get(parent)
        if holder is not None and hasattr(holder, child):
            parents[name] = (holder, child, getattr(holder, child))
            delattr(holder, child)
    for name in saved:
        del sys.modules[name]
    try:
        yield watch
    finally:
        watch.found = sorted(name for name in sys.modules if _under(name, forbidden))
        for name in watch.found:
            del sys.modules[name]
        sys.modules.update(saved)
        for holder, child, value in parents.values():
            setattr(holder, child, value)


class ImportHung(BaseException):
    """The learner's file ran past the load timeout on import (a BaseException, so its own `except
    Exception` does not swallow it)."""


def load(path: Path) -> Callable[..., Any]:
    """`Scheduler` from the Python file `path`, written in it: AnswerError if it cannot be loaded,
    NotWritten if it names a scheduler defined elsewhere (`from stallfree.variants import Stepwise as Scheduler`)."""
    if not path.is_file():
        raise AnswerError(f"FILE {str(path)!r}: no such file")
    name = f"_stallfree_answer_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AnswerError(f"FILE {str(path)!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    seconds = load_timeout()
    try:
        with Alarm(seconds, lambda: ImportHung(f"FILE {str(path)!r}: importing it did not finish within {seconds:g} s "
                                               f"(the load timeout, {LOAD_TIMEOUT_ENV})")):
            spec.loader.exec_module(module)
    except ImportHung as error:
        raise AnswerError(str(error)) from None
    except Exception as error:  # whatever the learner's module raises on import, it is the answer's fault
        raise AnswerError(f"FILE {str(path)!r}: importing it raised {type(error).__name__}: {error}") from None
    finally:
        sys.modules.pop(name, None)
    factory = getattr(module, FACTORY, None)
    if not callable(factory):
        raise AnswerError(f"FILE {str(path)!r}: it defines no {FACTORY}(token_budget=, max_seqs=, kv_tokens=)")
    defined_in = getattr(factory, "__module__", None)
    if defined_in != name:
        where = f"{defined_in}.{getattr(factory, '__qualname__', FACTORY)}" if defined_in else repr(factory)
        raise NotWritten(f"its {FACTORY} is {where}, not a scheduler written in FILE (define class {FACTORY} "
                         "there; it may subclass one)")
    return factory  # type: ignore[no-any-return]
