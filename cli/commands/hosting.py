"""Where a command runs the scheduler it judges (`stallfree.conformance.isolation.hosting`: stallfree's
own in this process, any other in a host process of its own), with the command line's short names
(`args.SCHEDULERS`) and a guard that names --scheduler."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.conformance.isolation.hosting import close, hosted
from stallfree.conformance.isolation.hosting import load_raw as load_full
from stallfree.spec import registry
from stallfree.spec.utils.loader import guarded

from .args import SCHEDULERS

__all__ = ["close", "hosted", "load_judged", "load_raw"]


def load_judged(
    target: str, name: str, timeout: float, timeout_flag: str = "--timeout",
) -> tuple[Callable[..., Any], str]:
    """The factory to judge `target` (`name` as given on the command line) and the design it declares;
    a TargetError (a ValueError) naming --scheduler where it cannot be loaded. Stallfree's own is
    guarded (its failure to build a scheduler a FactoryError naming --scheduler), as a hosted one is."""
    factory = load_raw(target, timeout, timeout_flag)
    if hosted(factory):
        return factory, factory.design  # type: ignore[attr-defined]
    return guarded(factory, name), registry.of(factory).name


def load_raw(target: str, timeout: float, timeout_flag: str = "--timeout") -> Callable[..., Any]:
    """`target` (MODULE:FACTORY or a short name of SCHEDULERS)'s factory, hosted unless stallfree's own."""
    return load_full(SCHEDULERS.get(target, target), timeout, timeout_flag)
