"""The variants' contracts by name, for the command line, the conformance kit and its worker process.

    aligned, aligned-B      block-aligned chunks, blocks of B tokens (aligned: 16)   stallfree.spec.aligned
    budget-change           the reference's rules with set_budget(B)                 stallfree.spec.budget_change
    rotation                set_budget(B), decodes to the longest waiting            stallfree.spec.budget_change
    aging, aging-A          priorities 0..3, one level gained every A steps (64)     stallfree.spec.priority
    priority                priorities 0..3 without aging                            stallfree.spec.priority
    static                  static batching: a batch closed until it has all finished stallfree.spec.static
"""

from __future__ import annotations

from .contract import Contract

NAMES = ("aligned", "budget-change", "rotation", "aging", "priority", "static")


def by_name(name: str) -> Contract:
    """The contract called `name`; ValueError naming the value and the names if there is none."""
    family, _, number = name.partition("-")
    if family in ("aligned", "aging") and number and (not number.isdigit() or int(number) < 1):
        raise ValueError(f"contract {name!r}: {family}-N needs an int N >= 1, got {number!r}")
    if family == "aligned":
        from . import aligned

        return aligned.contract(int(number)) if number else aligned.contract()
    if family == "aging":
        from . import priority

        return priority.contract(int(number)) if number else priority.contract()
    if name == "priority":
        from . import priority

        return priority.contract(None)
    if name == "static":
        from .static import STATIC_CONTRACT

        return STATIC_CONTRACT
    if name in ("budget-change", "rotation"):
        from .budget_change import BUDGET_CONTRACT, ROTATION_CONTRACT

        return BUDGET_CONTRACT if name == "budget-change" else ROTATION_CONTRACT
    raise ValueError(f"contract {name!r} is unknown; the contracts are {', '.join(NAMES)} (aligned-B, aging-A)")


def variant_rule_ids() -> set[str]:
    """The IDs of every variant contract's rules (for a command line's --rules)."""
    return {rule_id for name in NAMES for rule_id in by_name(name).ids}
