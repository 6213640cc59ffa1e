"""Profiles: the parts of the contract a scheduler may claim. Rules outside the claim are listed as
not checked, never as passing."""

from __future__ import annotations

from collections.abc import Iterable

from stallfree.spec import RULE_IDS, Kind, of_kind
from stallfree.spec.contract import Contract
from stallfree.spec.contracts import by_name
from stallfree.spec.designs import REGISTRIES, RESERVATION, rules_of

# Safety of every single step and of each request's tokens: what any chunked-prefill scheduler keeps,
# whatever its policy, its admission or its memory accounting (the safety rules of no one design).
SAFETY = of_kind(Kind.SAFETY)

PROFILES: dict[str, tuple[str, ...]] = {
    "safety": SAFETY,
    "full": RULE_IDS,
    # Each other design's registry, under the design's name ("paged": docs/paged.md): its workloads stop
    # and cancel requests where the target supports it, as the reservation design's do.
    **{design: tuple(r.id for r in registry) for design, registry in REGISTRIES.items() if design != RESERVATION},
}
# The profiles a design other than the reservation's judges (by its own monitor): those named after it.
DESIGN_OF_PROFILE: dict[str, str] = {design: design for design in REGISTRIES if design != RESERVATION}


def design_of_profile(profile: str | None) -> str:
    """The design whose monitor judges `profile` (None: the default profile, full)."""
    return DESIGN_OF_PROFILE.get(profile or "full", RESERVATION)

# The variants' profiles: each claims the whole contract of that name (`stallfree.spec.contracts`),
# widened rules and new rules included; workloads get budget schedules or priorities where it has them.
# aligned-B and aging-A name a block size and an aging period other than the defaults (16, 64).
VARIANT_PROFILES: tuple[str, ...] = ("aligned", "budget-change", "rotation", "aging", "priority", "static")
VARIANT_FAMILIES = frozenset(p.partition("-")[0] for p in VARIANT_PROFILES)  # "budget-change" -> "budget"


def is_variant_profile(profile: str | None) -> bool:
    return profile is not None and profile.partition("-")[0] in VARIANT_FAMILIES


def contract_of(profile: str | None) -> Contract | None:
    """The variant contract a profile claims, or None for the reference's profiles. Raises
    ValueError naming a variant profile that names no contract (aligned-0, aging-x)."""
    return by_name(profile) if profile is not None and is_variant_profile(profile) else None


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
    if contract is not None:
        return contract.ids
    if rules is None:
        name = profile or "full"
        if name not in PROFILES:
            names = ", ".join((*PROFILES, *VARIANT_PROFILES))
            raise ValueError(f"profile {name!r} is unknown; the profiles are {names}")
        rules = PROFILES[name]
    return tuple(r.id for r in rules_of(design_of_profile(profile), list(rules)))
