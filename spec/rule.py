"""What a rule is, in every design: an ID, a kind, the statement in one
sentence, the predicates that judge it; and how a registry of them is selected from by ID."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

StepCheck = Callable[[Any, Any], "str | None"]
PremiseCount = Callable[[Any, Any], int]


class Kind(Enum):
    """What a rule is about. Profiles, reports and the README's grouping are read off this."""

    INPUT = "input"  # what add() must accept and refuse
    SAFETY = "safety"  # nothing bad happens in any one plan or to any request's tokens
    LIVENESS = "liveness"  # something good happens: every accepted request finishes
    POLICY = "policy"  # the order the budget is spent in: this design's choices


@dataclass(frozen=True, slots=True)
class Premise:
    """What a rule bites on, where that is not every step: a rule whose premise no step of a run reached
    was not exercised there, and a report must not say it holds. `count(shadow, facts)` counts the
    premise in one step (read once the step's checks are done, before the shadow advances); `noun` names
    what it counts ("preemptions"); `absent` says, for a report, what never happened ("no run preempted").
    `whole`: the whole rule needs the premise (never reached: not judged); False: only part of it does
    (never reached: it holds in part, the part named by `absent`)."""

    noun: str
    absent: str
    count: PremiseCount
    whole: bool = True


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule of the contract: its ID, its kind, the rule in one sentence, and the predicates that
    judge it. The statement is written here and nowhere else in code.

    `plan_check` judges a plan before it runs (so an executor can refuse it); `done_check` judges
    the step once complete() has reported what it emitted. NEVER-FIT has neither: `never_fit`
    judges each add(). `design` names the memory design a rule belongs to ("reservation": the whole
    prompt_len + max_new taken at admission); None for a rule every design keeps. `premise`: what it
    bites on where that is not every step (`Premise`); None: every step."""

    id: str
    kind: Kind
    statement: str
    plan_check: StepCheck | None = None
    done_check: StepCheck | None = None
    design: str | None = None
    premise: Premise | None = None


def select_from(registry: tuple[Rule, ...], ids: object = None, what: str = "rule") -> tuple[Rule, ...]:
    """The rules of `registry` named in `ids` (all when None), in registry order; unknown IDs raise
    naming them (`what` names the registry in the message: "rule", "paged rule")."""
    if ids is None:
        return registry
    wanted = [ids] if isinstance(ids, str) else list(ids)  # type: ignore[call-overload]
    known = {r.id for r in registry}
    unknown = [i for i in wanted if i not in known]
    if unknown:
        names = ", ".join(r.id for r in registry)
        raise ValueError(f"unknown {what} ID(s) {unknown}; the {what}s are {names}")
    return tuple(r for r in registry if r.id in wanted)
