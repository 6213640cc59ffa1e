"""Where a scheduler under judgement runs: stallfree's own (the reference, its policies and variants)
in this process, for speed; any other target in a host process of its own (`remote.py`), so that it
can neither patch the oracle nor outlast its watchdog, and whatever it leaves running ends with the
command or run that hosts it. Used by the commands (`cli/commands/hosting.py` adds their short names)
and by the executor's rank 0."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.spec import registry
from stallfree.spec.utils.loader import load_target

OWN = "stallfree."  # a target in stallfree's own package runs in this process


def load_raw(target: str, timeout: float, timeout_flag: str = "--timeout",
             flag: str = "--scheduler") -> Callable[..., Any]:
    """`target`'s factory (MODULE:FACTORY): hosted in its own process unless it is stallfree's own,
    whatever design of stallfree's it declares (the reservation, paged or prefix design). A design the
    target's module registers itself (its rules and monitor the user's code too) is unknown here:
    loaded in process, which registers it. Picklable either way. `timeout_flag`: the option a hang's
    message names; `flag`: the option a load failure names."""
    from .remote import HostedFactory

    if not target.startswith(OWN):
        factory = HostedFactory(target, timeout, timeout_flag=timeout_flag)
        if factory.design in {d.name for d in registry.designs()}:
            return factory
        factory.close()
    return load_target(target, flag)


def hosted(factory: Callable[..., Any]) -> bool:
    """Whether `factory` makes schedulers hosted in their own process (which time every call)."""
    return callable(getattr(factory, "close", None))


def close(factory: Callable[..., Any] | None) -> None:
    """Ends the host process of a hosted factory (and whatever the target left running in it)."""
    if factory is not None and hosted(factory):
        factory.close()  # type: ignore[attr-defined]
