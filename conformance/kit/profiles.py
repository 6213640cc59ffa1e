"""Profiles: the parts of the contract a scheduler may claim. Rules outside the claim are listed as
not checked, never as passing."""

from __future__ import annotations

from collections.abc import Iterable

from stallfree.spec import RULE_IDS, Kind, of_kind, select

# Safety of every single step and of each request's tokens: what any chunked-prefill scheduler keeps,
# whatever its policy, its admission or its memory accounting (the safety rules of no one design).
SAFETY = of_kind(Kind.SAFETY)

PROFILES: dict[str, tuple[str, ...]] = {
    "safety": SAFETY,
    "full": RULE_IDS,
}


def checked_rules(rules: Iterable[str] | None = None, profile: str | None = None) -> tuple[str, ...]:
    """The rule IDs to check, in registry order: `rules` if given, else the profile's (default: full).
    Raises ValueError naming an unknown profile or rule ID, or an empty selection."""
    if rules is not None and profile is not None:
        raise ValueError("give rules or a profile, not both")
    if rules is not None:
        rules = list(rules)
        if not rules:  # checking nothing would report every rule as held by nobody: refused
            raise ValueError(f"no rule given: name at least one of {', '.join(RULE_IDS)}")
    if rules is None:
        name = profile or "full"
        if name not in PROFILES:
            raise ValueError(f"profile {name!r} is unknown; the profiles are {', '.join(PROFILES)}")
        rules = PROFILES[name]
    return tuple(r.id for r in select(list(rules)))
