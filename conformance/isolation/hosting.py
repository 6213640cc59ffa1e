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
    whatever design it declares. A design the target's module registers itself is unknown here until
    that module is imported here too: its rules and monitor judge the run, so they are the oracle's
    (imported, never called as a scheduler), while the scheduler's calls stay in the host. A target whose
    design is still unknown then is loaded in process (the registry's refusal names the design).
    Picklable either way. `timeout_flag`: the option a hang's message names; `flag`: the option a load
    failure names."""
    from .remote import HostedFactory

    if not target.startswith(OWN):
        factory = HostedFactory(target, timeout, timeout_flag=timeout_flag)
        if factory.design not in _designs():
            try:
                load_target(target, flag)  # the module registers its design here, as it did in the host
            except BaseException:
                factory.close()
                raise
        if factory.design in _designs():
            return factory
        factory.close()
    return load_target(target, flag)


def _designs() -> set[str]:
    return {d.name for d in registry.designs()}


def hosted(factory: Callable[..., Any]) -> bool:
    """Whether `factory` makes schedulers hosted in their own process (which time every call)."""
    return callable(getattr(factory, "close", None))


def close(factory: Callable[..., Any] | None) -> None:
    """Ends the host process of a hosted factory (and whatever the target left running in it)."""
    if factory is not None and hosted(factory):
        factory.close()  # type: ignore[attr-defined]
