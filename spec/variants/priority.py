"""The contract of priorities with aging.

add(rid, prompt_len, max_new, priority) takes a priority, an int in [0, P] (higher runs sooner; add()
without one means 0). A waiting request's effective priority at step t is

    effective(t) = priority + floor((t - arrival) / A)

with `arrival` the step before which it was added and A the aging period (steps per level). The
classes keep their order (decodes, then partial prompts, then admissions). Inside the decodes and the
partial prompts priority changes nothing: while the budget is fixed every ready request is decoded
every step (READY-WITHIN-BUDGET) and at most one prompt is partial (ONE-PARTIAL). It orders admission:

- PRIORITY-ORDER widens FCFS: requests are admitted by effective priority, highest first, ties by
  arrival; the first in that order that does not fit blocks everyone behind it, of any priority. The
  reason is FCFS's: a large request at the head, skipped whenever a smaller one fits the memory the
  finishing requests return, could be skipped forever. Blocking keeps the head's wait bounded, and
  aging puts every request at the head in time.
- PRIORITY-WORK-CONSERVING widens WORK-CONSERVING: the head whose blocking excuses unused budget is the
  head of that order.
- AGING-BOUND, the bounded-wait theorem. Assumption: every priority is at most P. Then a request of
  priority p that arrived at step a is never admitted after a request that arrived at or after step
  a + (P - p) * A (and after it): at any step t the later one's effective priority is at most
  P + floor((t - a - (P - p) * A) / A) = p + floor((t - a) / A), the earlier one's, and ties go by
  arrival. So at most W + N requests are admitted ahead of it, W those waiting when it arrived and N
  those arriving in its first (P - p) * A steps (N <= lambda * (P - p) * A under at most lambda
  arrivals a step), and it is admitted once those have been, a bound the aging rate sets. Without
  aging (A infinite) no such bound exists: a stream of higher-priority arrivals starves it.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..calls import never_fit
from ..contract import PRIORITIES, STOPS, Contract
from ..errors import FieldTypeError, InvalidField, RuleViolation
from ..reservation.contract import ContractMonitor, keeping
from ..reservation.facts import StepFacts
from ..reservation.monitor import refusal
from ..reservation.rules import fcfs, work_conserving
from ..reservation.shadow import Shadow, Track
from ..rule import Kind, Rule
from ..types import Config, Request, check_int
from ..verdict import PROTOCOL

MAX_PRIORITY = 3  # P: priorities are 0..P (the contract's arrival assumption for AGING-BOUND)
DEFAULT_AGING = 64  # A: steps a waiting request takes to gain one priority level
LISTED_AGING = (DEFAULT_AGING, 4)  # the aging periods stallfree.variants.priority ships a scheduler for


def check_priority(priority: object, max_priority: int = MAX_PRIORITY) -> int:
    """`priority` if it is an int in [0, max_priority]; raise naming the field and the value if not."""
    value = check_int("priority", priority, minimum=0)
    if value > max_priority:
        raise InvalidField(f"priority must be <= {max_priority}, got {value}")
    return value


def effective(priority: int, arrival: int, step: int, aging: int | None) -> int:
    """A waiting request's effective priority at `step` (no aging: its priority)."""
    return priority if aging is None else priority + (step - arrival) // aging


@dataclass(slots=True)
class PriorityShadow(Shadow):
    """The shadow, plus each waiting request's priority and arrival step."""

    priority: dict[int, int] = field(default_factory=dict)
    arrival: dict[int, int] = field(default_factory=dict)


def in_order(s: PriorityShadow, aging: int | None) -> list[Track]:
    """The waiting requests by effective priority at this step, highest first, ties by arrival."""
    step = s.step
    ranked = sorted(
        range(len(s.waiting)),
        key=lambda i: (-effective(s.priority[s.waiting[i].rid], s.arrival[s.waiting[i].rid], step, aging), i),
    )
    return [s.waiting[i] for i in ranked]


def reordered(s: PriorityShadow, aging: int | None) -> Shadow:
    """A view of `s` whose waiting line is in effective-priority order, for the rules that read the head."""
    view = copy.copy(s)
    view.waiting = deque(in_order(s, aging))
    return view


def aging_bound_violation(s: PriorityShadow, f: StepFacts, aging: int, max_priority: int) -> str | None:
    """AGING-BOUND, judged on the plan: no admission arrived (P - p) * A steps or more after a
    request of priority p still waiting."""
    if not f.admitted:
        return None
    admitted = {c.track.rid for c in f.admitted}
    oldest: dict[int, tuple[int, Track]] = {}  # priority -> (position, the earliest still waiting at it)
    positions: dict[int, int] = {}  # admitted rid -> its position in arrival order
    for i, t in enumerate(s.waiting):
        if t.rid in admitted:
            positions[t.rid] = i
        elif s.priority[t.rid] not in oldest:
            oldest[s.priority[t.rid]] = (i, t)
    for c in f.admitted:
        a_x = s.arrival[c.track.rid]
        for p, (i, t) in oldest.items():
            limit = s.arrival[t.rid] + (max_priority - p) * aging
            if a_x >= limit and positions[c.track.rid] > i:
                return (
                    f"admitted rid {c.track.rid} (arrived at step {a_x}) while rid {t.rid} of priority {p}, "
                    f"arrived at step {s.arrival[t.rid]}, waits; none arriving after it at or after step "
                    f"{limit} (= {s.arrival[t.rid]} + ({max_priority} - {p}) * {aging}) may go before it"
                )
    return None


def rules(aging: int | None, max_priority: int) -> tuple[Rule, ...]:
    """PRIORITY-ORDER, PRIORITY-WORK-CONSERVING, and AGING-BOUND when there is aging."""

    def priority_order(s: Shadow, f: StepFacts) -> str | None:
        """PRIORITY-ORDER, judged on the plan: the admitted requests are the head of the effective order."""
        assert isinstance(s, PriorityShadow)
        if not f.admitted:
            return None
        return fcfs(reordered(s, aging), f)

    def priority_work_conserving(s: Shadow, f: StepFacts) -> str | None:
        """PRIORITY-WORK-CONSERVING, judged on the plan: WORK-CONSERVING with the head of the effective order."""
        assert isinstance(s, PriorityShadow)
        if s.config.token_budget - f.num_tokens <= 0:
            return None
        return work_conserving(reordered(s, aging) if s.waiting else s, f)

    def aging_bound(s: Shadow, f: StepFacts) -> str | None:
        """AGING-BOUND, judged on the plan (see `aging_bound_violation`)."""
        assert isinstance(s, PriorityShadow) and aging is not None
        return aging_bound_violation(s, f, aging, max_priority)

    order = Rule(
        "PRIORITY-ORDER", Kind.POLICY,
        "requests are admitted by effective priority (priority + steps waited // A), highest first, ties by "
        "arrival; the first in that order that does not fit blocks every request behind it.",
        plan_check=priority_order)
    conserving = Rule(
        "PRIORITY-WORK-CONSERVING", Kind.POLICY,
        "budget is left unused only when nothing more may run: every ready and partial request is served in "
        "full, and the head of the effective-priority order is blocked (no slot, not enough free KV) or there is none.",
        plan_check=priority_work_conserving)
    if aging is None:
        return (order, conserving)
    bound = Rule(
        "AGING-BOUND", Kind.LIVENESS,
        f"with priorities at most P = {max_priority}, a request of priority p that arrived at step a is never "
        "admitted after one that arrived after it, at or after step a + (P - p) * A.",
        plan_check=aging_bound)
    return (bound, order, conserving)


class PriorityMonitor(ContractMonitor):
    """The monitor, with add(rid, prompt_len, max_new, priority) and the shadow the priority rules read."""

    def __init__(self, scheduler: Any, config: Config, rules: Iterable[str] | None, contract: Contract) -> None:
        super().__init__(scheduler, config, rules, contract)
        self.shadow = PriorityShadow(config)
        self.max_priority = getattr(contract, "max_priority", MAX_PRIORITY)

    def add(self, rid: object, prompt_len: object, max_new: object, priority: object = 0) -> bool:
        shadow = self.shadow
        assert isinstance(shadow, PriorityShadow)
        verdict = refusal(shadow, rid, prompt_len, max_new)
        if verdict is None:
            try:
                check_priority(priority, self.max_priority)
            except (InvalidField, FieldTypeError) as error:
                verdict = str(error)
        raised: BaseException | None = None
        try:
            self.scheduler.add(rid, prompt_len, max_new, priority)
        except Exception as error:
            if verdict is None and not isinstance(error, ValueError | TypeError):
                raise
            raised = error
        self.num_adds += 1
        call = f"add({rid!r}, {prompt_len!r}, {max_new!r}, priority={priority!r})"
        if self._checks_add:
            message = never_fit(verdict, raised, may_refuse=type(rid) is int and rid in shadow.ended)
            if message is not None:
                raise RuleViolation("NEVER-FIT", shadow.step, f"{call}: {message}")
        if raised is not None:
            if type(rid) is int:
                shadow.rejected.add(rid)
            return False
        try:
            shadow.accept(Request(rid, prompt_len, max_new))  # type: ignore[arg-type]
        except (InvalidField, TypeError) as error:
            message = f"{call} was accepted but cannot be followed: {error}"
            raise RuleViolation(PROTOCOL, shadow.step, message) from None
        shadow.priority[rid] = priority  # type: ignore[index, assignment]
        shadow.arrival[rid] = shadow.step  # type: ignore[index]
        return True

    def complete(self, stopped: Iterable[int] = ()) -> StepFacts:
        facts = super().complete(stopped)
        shadow = self.shadow
        assert isinstance(shadow, PriorityShadow)
        for chunk in facts.admitted:
            del shadow.priority[chunk.track.rid], shadow.arrival[chunk.track.rid]
        return facts


@dataclass(frozen=True, slots=True)
class PriorityContract(Contract):
    aging: int | None = DEFAULT_AGING
    max_priority: int = MAX_PRIORITY


@cache
def contract(aging: int | None = DEFAULT_AGING, max_priority: int = MAX_PRIORITY) -> PriorityContract:
    """Priorities 0..max_priority, aging one level every `aging` steps (None: no aging)."""
    name = "priority" if aging is None else f"aging-{aging}"
    return PriorityContract(
        name, keeping("FCFS", "WORK-CONSERVING", extra=rules(aging, max_priority)),
        widens=(("FCFS", "PRIORITY-ORDER"), ("WORK-CONSERVING", "PRIORITY-WORK-CONSERVING")),
        monitor=PriorityMonitor, aging=aging, max_priority=max_priority,
        scheduler=SCHEDULERS.get(aging or 0, ""), faults="stallfree.faults.priority:PRIORITY_FAULTS",
        carries=frozenset({STOPS, PRIORITIES}), policies=POLICIES.get(aging, ()),
    )


# The priority variants' schedulers by aging period, and the simulator's names for them.
SCHEDULERS: dict[int, str] = {
    DEFAULT_AGING: "stallfree.variants.priority:BatchedPrioritized", 4: "stallfree.variants.priority:Aging4",
}
POLICIES: dict[int | None, tuple[tuple[str, str], ...]] = {
    DEFAULT_AGING: (("aging", SCHEDULERS[DEFAULT_AGING]),  # admission by priority with aging (A = 64)
                    ("no-aging", "stallfree.faults.priority:NoAging")),  # strict priority: AGING-BOUND's control
    4: (("aging-4", SCHEDULERS[4]),),  # the same, A = 4 (the trace example)
}
