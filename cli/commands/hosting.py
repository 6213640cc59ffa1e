"""Where a command runs the scheduler it judges: stallfree's own (the reference, its policies and
variants) in this process, for speed; any other target in a host process of its own
(`stallfree.conformance.isolation.remote`), so that it can neither patch the oracle nor outlast its
watchdog, and whatever it leaves running ends with the command."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.spec.designs import RESERVATION, design_of
from stallfree.spec.loader import guarded

from .args import SCHEDULERS, load_scheduler

OWN = "stallfree."  # a target in stallfree's own package runs in this process


def load_judged(target: str, name: str, timeout: float) -> tuple[Callable[..., Any], str]:
    """The factory to judge `target` (`name` as given on the command line) and the design it declares;
    a TargetError (a ValueError) naming --scheduler where it cannot be loaded."""
    from stallfree.conformance.isolation.remote import remote_factory

    target = SCHEDULERS.get(target, target)
    if not target.startswith(OWN):
        factory, design = remote_factory(target, timeout)
        if design == RESERVATION:
            return factory, design
        factory.close()  # type: ignore[attr-defined]  # the paged and prefix designs are judged in process
    loaded = load_scheduler(target)
    return guarded(loaded, name), design_of(loaded)


def hosted(factory: Callable[..., Any]) -> bool:
    """Whether `factory` makes schedulers hosted in their own process (which time every call)."""
    return callable(getattr(factory, "close", None))


def close(factory: Callable[..., Any] | None) -> None:
    """Ends the host process of a hosted factory (and whatever the target left running in it)."""
    if factory is not None and hosted(factory):
        factory.close()  # type: ignore[attr-defined]
