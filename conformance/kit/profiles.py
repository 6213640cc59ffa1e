"""Profiles: the parts of the contract a scheduler may claim. Rules outside the claim are listed as
not checked, never as passing.

"safety" and "full" are parts of the reservation design's contract; every other profile is a
contract of the registry (`stallfree.spec.registry`) by its name, claimed whole: a design ("paged",
docs/paged.md) or a variant's contract (aligned-B and aging-A name a block size and an aging period
other than the defaults, 16 and 64), widened rules and new rules included; its workloads get budget
schedules or priorities where it has them, stops and cancels where the target supports them."""

from __future__ import annotations

from collections.abc import Iterable

from stallfree.spec import RULE_IDS, Kind, of_kind, registry
from stallfree.spec.contract import Contract

# Safety of every single step and of each request's tokens: what any chunked-prefill scheduler keeps,
# whatever its policy, its admission or its memory accounting (the safety rules of no one design).
SAFETY = of_kind(Kind.SAFETY)
PROFILES: dict[str, tuple[str, ...]] = {"safety": SAFETY, "full": RULE_IDS}  # of the reservation design's contract


def profiles() -> tuple[str, ...]:
    """Every profile's name: the reservation design's parts, then each other contract of the registry."""
    return (*PROFILES, *(name for name in registry.names() if name != registry.RESERVATION.name))


def is_profile(profile: str) -> bool:
    return profile in PROFILES or registry.knows(profile)


def contract_of(profile: str | None) -> Contract:
    """The contract a profile claims (part of) (None: the default profile, full). Raises ValueError naming
    an unknown profile, or a family's profile that names no contract (aligned-0, aging-x)."""
    if profile is None or profile in PROFILES:
        return registry.RESERVATION
    if not registry.knows(profile):
        raise ValueError(f"profile {profile!r} is unknown; the profiles are {', '.join(profiles())}")
    return registry.contract(profile)


def checked_rules(rules: Iterable[str] | None = None, profile: str | None = None) -> tuple[str, ...]:
    """The rule IDs to check, in registry order: `rules` if given, else the profile's (default: full).
    Raises ValueError naming an unknown profile or rule ID, or an empty selection."""
    if rules is not None and profile is not None:
        raise ValueError("give rules or a profile, not both")
    if rules is not None:
        rules = list(rules)
        if not rules:  # checking nothing would report every rule as held by nobody: refused
            raise ValueError(f"no rule given: name at least one of {', '.join(RULE_IDS)}")
    contract = contract_of(profile)
    if rules is None:
        rules = PROFILES.get(profile or "full", contract.ids)
    return tuple(r.id for r in contract.select(list(rules)))
