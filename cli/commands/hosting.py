"""Where a command runs the scheduler it judges: stallfree's own (the reference, its policies and
variants) in this process, for speed; any other target in a host process of its own
(`stallfree.conformance.isolation.remote`), so that it can neither patch the oracle nor outlast its
watchdog, and whatever it leaves running ends with the command."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.spec import registry
from stallfree.spec.loader import guarded

from .args import SCHEDULERS, load_scheduler

OWN = "stallfree."  # a target in stallfree's own package runs in this process


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
    """`target`'s factory: hosted in its own process unless it is stallfree's own, whatever design of
    stallfree's it declares (the reservation, paged or prefix design). A design the target's module
    registers itself (its rules and monitor the user's code too) is unknown here: loaded in process,
    which registers it. Picklable either way. `timeout_flag`: the option a hang's message names."""
    from stallfree.conformance.isolation.remote import HostedFactory

    target = SCHEDULERS.get(target, target)
    if not target.startswith(OWN):
        factory = HostedFactory(target, timeout, timeout_flag=timeout_flag)
        if factory.design in {d.name for d in registry.designs()}:
            return factory
        factory.close()
    return load_scheduler(target)


def hosted(factory: Callable[..., Any]) -> bool:
    """Whether `factory` makes schedulers hosted in their own process (which time every call)."""
    return callable(getattr(factory, "close", None))


def close(factory: Callable[..., Any] | None) -> None:
    """Ends the host process of a hosted factory (and whatever the target left running in it)."""
    if factory is not None and hosted(factory):
        factory.close()  # type: ignore[attr-defined]
