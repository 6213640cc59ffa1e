"""The memory designs the contract covers, by name: each with its monitor and its rule registry.

"reservation" (the reference's: prompt_len + max_new taken at admission) is judged by `Monitor`
against `rules.RULES`; "paged" (blocks taken as tokens are computed, recompute preemption) by
`PagedMonitor` against `paged_rules.PAGED_RULES`; "prefix" (the paged design with prefix caching,
`stallfree.prefix`) by its `PrefixMonitor` against its `PREFIX_RULES`. A scheduler (or its factory) names its design in
a `design` attribute; one that names none is the reservation design's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.prefix.contract.monitor import PrefixMonitor  # the prefix design's contract: layer 0
from stallfree.prefix.contract.rules import PREFIX_RULES

from .monitor import Monitor
from .paged_monitor import PagedMonitor
from .paged_rules import PAGED_RULES
from .rules import RULES, Rule, select_from

RESERVATION = "reservation"
PAGED = "paged"
PREFIX = "prefix"
MONITORS: dict[str, Callable[..., Any]] = {RESERVATION: Monitor, PAGED: PagedMonitor, PREFIX: PrefixMonitor}
REGISTRIES: dict[str, tuple[Rule, ...]] = {RESERVATION: RULES, PAGED: PAGED_RULES, PREFIX: PREFIX_RULES}


def design_of(obj: object) -> str:
    """The design a scheduler or factory declares (its `design` attribute), the reservation's if none.
    Raises ValueError naming an unknown design."""
    design = getattr(obj, "design", RESERVATION)
    if design not in MONITORS:
        raise ValueError(f"design {design!r} is unknown; the designs are {', '.join(MONITORS)}")
    return str(design)


def statement(rule_id: str, design: str | None = None) -> str | None:
    """The statement of `rule_id` in `design`'s registry, else in whichever registry holds it (the
    reservation's first)."""
    first = [REGISTRIES[design]] if design in REGISTRIES else []
    for registry in (*first, *REGISTRIES.values()):
        for rule in registry:
            if rule.id == rule_id:
                return rule.statement
    return None


def rules_of(design: str, ids: object = None) -> tuple[Rule, ...]:
    """The rules of `design`'s registry named in `ids` (all when None), in registry order. Raises
    ValueError naming an unknown design, or the IDs `design`'s registry lacks."""
    if design not in REGISTRIES:
        raise ValueError(f"design {design!r} is unknown; the designs are {', '.join(REGISTRIES)}")
    return select_from(REGISTRIES[design], ids, "rule" if design == RESERVATION else f"{design} rule")
