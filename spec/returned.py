"""What a scheduler's call returned, read safely: bounded (no endless
iterable hangs a monitor), a one-shot iterator refused, anything else a PROTOCOL violation naming
the call and the value."""

from __future__ import annotations

from itertools import islice

from .errors import RuleViolation
from .verdict import PROTOCOL

MAX_ENTRIES = 1_000_000  # a plan or an emitted list longer than this is junk (or endless), not a step


def bounded(items: object) -> list:  # type: ignore[type-arg]
    """At most MAX_ENTRIES + 1 items of an iterable: an endless one is cut, never read to exhaustion.
    Every design's monitor reads what a scheduler returns through it, so no input hangs a monitor."""
    return list(islice(items, MAX_ENTRIES + 1))  # type: ignore[call-overload]


def protocol(step: int, message: str, rule: str = PROTOCOL) -> RuleViolation:
    """A violation of `rule` (PROTOCOL unless told) at `step`: what every design's observer raises."""
    return RuleViolation(rule, step, message)


def returned(step: int, value: object, call: str, expected: str, items: str) -> list:  # type: ignore[type-arg]
    """What `call` ("schedule()", "complete()") returned at `step`, as a list (a list as it is, else
    read through `bounded`). Raises a PROTOCOL violation if it is no iterable (not `expected`) or holds
    over MAX_ENTRIES `items`."""
    try:
        found = value if type(value) is list else bounded(value)
    except TypeError:
        raise protocol(step, f"{call} returned {type(value).__name__} {value!r:.80}, not {expected}") from None
    if len(found) > MAX_ENTRIES:
        raise protocol(step, f"{call} returned more than {MAX_ENTRIES:,} {items} (an endless iterable?)")
    return found


def plan_entries(step: int, plan: object) -> list:  # type: ignore[type-arg]
    """The entries of the plan schedule() returned at `step`; see `returned`. A one-shot iterator (a
    generator: its own iterator) is no sequence: complete(plan) gets it back already read. PROTOCOL."""
    if one_shot(plan):
        raise protocol(step, f"schedule() returned {type(plan).__name__} {plan!r:.80}, a one-shot iterator, not a "
                       "sequence: complete(plan) would get it back already read")
    return returned(step, plan, "schedule()", "a sequence", "entries")


def one_shot(value: object) -> bool:
    """Whether `value` is its own iterator (a generator, a map, an iter() of a list): readable once."""
    try:
        return iter(value) is value  # type: ignore[call-overload]
    except TypeError:
        return False


def emitted_rids(step: int, emitted: object) -> list[int]:
    """The rids complete() returned at `step` as emitting a token; see `returned`."""
    return returned(step, emitted, "complete()", "an iterable of rids", "rids")
