"""The negative controls: for each rule, the wrong scheduler the model checker must catch (from
`stallfree.faults`), the bound that exposes it, and the wrong Z3 policy the theorems must refute."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from stallfree.faults import FAULTS, LIFECYCLE_FAULTS
from stallfree.faults.starving import STARVING
from stallfree.spec import RULE_IDS
from stallfree.spec.reservation.invariants import INVARIANTS

from .explicit.bounds import FIELDS, Bounds
from .explicit.snapshot import Hidden
from .smt.mutants import MUTANTS
from .smt.policy import Policy
from .smt.theorems import THEOREMS

CONTROL_BOUND = "2,3,8,3,3,3"  # S > B (so READY-WITHIN-BUDGET could fail) and M = 3; exposes every fault but one
CONTROL_BOUNDS = {
    # IgnoreSlots needs more requests running than slots, and budget to start them beside the decodes:
    # at S = 3 that is 4 adds; B = 3, S = 2 shows it within 3.
    "SLOTS": "3,2,8,3,3,3",
    "READY-WITHIN-BUDGET": "1,3,8,3,2,3",  # S > B: three requests could be ready beside a budget of 1
}
# A derived invariant follows from its premises, so a scheduler that breaks it breaks a premise
# first and the monitor names the premise. Its model-check control leaves the premises unjudged, so
# that the invariant's own check must catch it: the fault of the rule named here breaks it.
INVARIANT_FAULTS = {"ONE-PARTIAL": "PARTIAL-NEXT", "READY-WITHIN-BUDGET": "BUDGET"}
STALL_PERIOD = 4  # faults.catalog.PeriodicStall plans nothing every fourth step


def _steps_mod_period(scheduler: Any) -> Hashable:
    return scheduler.num_steps % STALL_PERIOD


LIFECYCLE_RULES = ("CANCEL",)  # rules only a model check with stop and cancel actions can break


def control_bound(rule: str) -> Bounds:
    bound = Bounds.parse(CONTROL_BOUNDS.get(rule, CONTROL_BOUND))
    if rule in LIFECYCLE_RULES:
        return Bounds(*(getattr(bound, f) for f in FIELDS), lifecycle=True)
    return bound


def lifecycle_bound() -> Bounds:
    """The bound of the model check with stops and cancels, and of its negative controls."""
    return Bounds(*(getattr(Bounds.parse(CONTROL_BOUND), f) for f in FIELDS), lifecycle=True)


def wrong_lifecycle_state(scheduler: Any) -> Hashable:
    """What the lifecycle faults keep that the shadow does not see: their own waiting line (a fault
    may reorder it; a priority variant's is its levels), and the requests they ended but keep planning
    or keep in line. The hidden state of the lifecycle faults on the variants too."""
    line = tuple((s.request.prompt_len, s.request.max_new) for s in scheduler.waiting)
    levels = tuple(tuple((e[2].request.prompt_len, e[2].request.max_new) for e in queue)
                   for queue in getattr(scheduler, "levels", ()))
    return line, levels, len(getattr(scheduler, "ghosts", ())), len(getattr(scheduler, "tombstones", ()))


def hidden_for(rule: str, fault: Any = None) -> Hidden | None:
    """The hidden state of the rule's fault: PeriodicStall's step counter (modulo its period) decides
    when it stalls, and the monitor's shadow cannot see it; a lifecycle fault's own line and ghosts."""
    if fault in LIFECYCLE_FAULTS or (fault is None and rule in LIFECYCLE_RULES):
        return wrong_lifecycle_state
    return _steps_mod_period if rule == "PROGRESS" else None


def fault(rule: str) -> Any:
    if rule == "LIVENESS":  # starves a request while planning every step
        return STARVING["LifoAdmission"]
    if rule in INVARIANT_FAULTS:
        return FAULTS[INVARIANT_FAULTS[rule]]
    if rule not in FAULTS:
        raise ValueError(f"no fault breaks rule {rule!r}; the faults break {', '.join((*FAULTS, *INVARIANT_FAULTS))}")
    return FAULTS[rule]


def judged(rule: str) -> tuple[str, ...] | None:
    """The rules the monitor judges in `rule`'s model-check control: all (None), or, for a derived
    invariant, all but its premises."""
    if rule not in INVARIANT_FAULTS:
        return None
    premises = next(i.premises for i in INVARIANTS if i.id == rule)
    return tuple(r for r in RULE_IDS if r not in premises)


def mutant(rule: str) -> Policy:
    """The wrong Z3 policy made to break `rule`. CANCEL has none: its Z3 controls are wrong cancel
    steps (`smt.cancels.CONTROLS`), so the step theorems run on the reference's policy."""
    if rule in LIFECYCLE_RULES:
        return Policy()
    for cls in MUTANTS.values():
        if getattr(cls, "breaks", None) == rule:
            return cls()
    for theorem in THEOREMS:  # a rule whose theorem's control is made to break another rule
        if theorem.name == rule:
            return MUTANTS[theorem.control]()
    raise ValueError(f"no wrong Z3 policy breaks rule {rule!r}")


def twin_fault(policy: Policy) -> Any:
    """The scheduler in `stallfree.faults` that makes the same mistake as a wrong Z3 policy (they
    share the class name), or None: a workload that breaks one must break the other."""
    return next((cls for cls in FAULTS.values() if cls.__name__ == type(policy).__name__), None)
