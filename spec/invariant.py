"""What a state invariant is, in every design: an ID, where it comes from,
the statement, its check; and the first of a registry of them a state breaks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .shown import Shown


class Origin(Enum):
    """Where an invariant comes from."""

    STATED = "stated"  # the contract says so in a rule (its ID is that rule's) or as the type invariant
    DERIVED = "derived"  # a theorem of the rules in `premises`, while the budget is fixed


StateCheck = Callable[[Any, Shown], "str | None"]


@dataclass(frozen=True, slots=True)
class Invariant:
    """A state invariant: its ID, where it comes from, the statement, its check. `premises` are the
    rules a derived invariant follows from; `reads_scheduler` is True where the check compares what
    the scheduler shows with the shadow (the part of it that can fail while every step rule holds)."""

    id: str
    origin: Origin
    statement: str
    check: StateCheck
    premises: tuple[str, ...] = ()
    reads_scheduler: bool = False


def broken(shadow: Any, view: Shown, invariants: tuple[Invariant, ...]) -> tuple[str, str] | None:
    """The first of `invariants` the state breaks, as (ID, what happened), or None."""
    for invariant in invariants:
        message = invariant.check(shadow, view)
        if message is not None:
            return invariant.id, message
    return None
