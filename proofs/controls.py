"""The negative controls: for each rule, the wrong scheduler the model checker must catch (from
`stallfree.faults`), the bound that exposes it, and the wrong Z3 policy the theorems must refute."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from stallfree.faults import FAULTS

from .explicit.bounds import Bounds
from .explicit.snapshot import Hidden
from .smt.mutants import MUTANTS
from .smt.policy import Policy

CONTROL_BOUND = "3,2,8,3,3,2"  # exposes every fault but one; each fault takes well under a second
CONTROL_BOUNDS = {
    # PartialsBeforeDecodes starves a decode only when a partial prompt's rest covers the whole budget, which
    # at budget 3 needs prompts of 5; at budget 2, prompts of 3 do.
    "DECODE-FIRST": "2,2,8,3,3,2",
}
STALL_PERIOD = 4  # faults.catalog.PeriodicStall plans nothing every fourth step


def _steps_mod_period(scheduler: Any) -> Hashable:
    return scheduler.num_steps % STALL_PERIOD


def control_bound(rule: str) -> Bounds:
    return Bounds.parse(CONTROL_BOUNDS.get(rule, CONTROL_BOUND))


def hidden_for(rule: str) -> Hidden | None:
    """The hidden state of the rule's fault: PeriodicStall's step counter (modulo its period) decides
    when it stalls, and the monitor's shadow cannot see it."""
    return _steps_mod_period if rule == "PROGRESS" else None


def fault(rule: str) -> Any:
    if rule not in FAULTS:
        raise ValueError(f"no fault breaks rule {rule!r}; the faults break {', '.join(FAULTS)}")
    return FAULTS[rule]


def mutant(rule: str) -> Policy:
    """The wrong Z3 policy made to break `rule`."""
    for cls in MUTANTS.values():
        if getattr(cls, "breaks", None) == rule:
            return cls()
    raise ValueError(f"no wrong Z3 policy breaks rule {rule!r}")


def twin_fault(policy: Policy) -> Any:
    """The scheduler in `stallfree.faults` that makes the same mistake as a wrong Z3 policy (they
    share the class name), or None: a workload that breaks one must break the other."""
    return next((cls for cls in FAULTS.values() if cls.__name__ == type(policy).__name__), None)
