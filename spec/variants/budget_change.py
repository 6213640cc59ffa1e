"""The contract of a budget changed while running, and of rotation among the ready requests.

`set_budget(B)` is one more call of the protocol: an operator turning the latency knob, or an
autoscaler, sets the token budget between steps; it takes effect at the next schedule(). Any int
B >= 1 is accepted; any other value is refused with ValueError or TypeError, nothing changed
(BUDGET-CHANGE).

What changes in the contract when the budget can change:

- BUDGET is judged against the budget in force at the step (the last one set before its schedule()).
- DECODE-FIRST's "up to the budget" becomes live: after a drop below the ready count, the step carries
  B decodes and no prefill token. Under the reference's rule those B are the oldest ready requests.
- READY-WITHIN-BUDGET is no longer a theorem: a drop makes ready requests outnumber B at once. It held
  by induction over steps with one fixed B, and a change of B breaks the induction. Every other state
  invariant still holds (ONE-PARTIAL: prefill runs only in a step that decoded every ready request).
- Every other rule reads the same, with B the budget in force.

Oldest-first then starves the newest ready requests for as long as the oldest keep emitting. The
rotation contract replaces DECODE-FIRST by DECODE-FAIR: the B decodes go to the ready requests that have
waited longest since their last token (ties: the oldest admitted). Its consequence, checked on its
own as DECODE-WAIT: a ready request goes at most ceil(R/B) - 1 steps in a row without a token, where
R is the number of ready requests in the first step of the run and B the smallest budget during it.
Proof: in each step of the run the B_t decodes go to requests ahead of it in that order, each then
falls behind it (its last token is newer), and a request newly ready is behind it too (its first
token is newer); so the k steps of a run serve at least B_1 + ... + B_k <= R - 1 requests that were
ahead at its start, and k <= floor((R - 1) / B) = ceil(R / B) - 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..contract import BUDGETS, STOPS, Contract
from ..errors import FieldTypeError, InvalidField, RuleViolation
from ..reservation.contract import ContractMonitor, keeping
from ..reservation.facts import StepFacts
from ..reservation.shadow import Shadow
from ..rule import Kind, Rule
from ..types import Config, check_int
from ..verdict import PROTOCOL


@dataclass(slots=True)
class Run:
    """A ready request's current run of steps without a token."""

    steps: int  # steps in the run so far
    num_ready: int  # ready requests in the run's first step
    min_budget: int  # the smallest budget in force during the run

    @property
    def bound(self) -> int:
        """DECODE-WAIT's bound: ceil(R / B) - 1."""
        return -(-self.num_ready // self.min_budget) - 1


@dataclass(slots=True)
class BudgetShadow(Shadow):
    """The shadow, plus what the fairness rules read: each ready request's last token and its run."""

    last_token: dict[int, int] = field(default_factory=dict)  # ready rid -> the step of its last token
    runs: dict[int, Run] = field(default_factory=dict)  # ready rid -> its run without a token, if in one

    def forget(self, rid: int) -> None:
        """`rid`'s request ended: drop its records, which a new request reusing the rid must not inherit."""
        self.last_token.pop(rid, None)
        self.runs.pop(rid, None)


def longest_waiting(s: BudgetShadow, k: int) -> list[int]:
    """The k ready rids that waited longest since their last token; ties: the oldest admitted."""
    ready = s.ready()
    order = sorted(range(len(ready)), key=lambda i: (s.last_token.get(ready[i].rid, -1), i))
    return [ready[i].rid for i in order[:k]]


def decode_fair(s: Shadow, f: StepFacts) -> str | None:
    """DECODE-FAIR, judged on the plan: all ready requests decoded when they fit; else the B that
    waited longest, and no prefill."""
    assert isinstance(s, BudgetShadow)
    budget = s.config.token_budget
    decoded = {t.rid for t, _ in f.decodes}
    if s.num_ready <= budget:
        if len(f.decodes) == s.num_ready:
            return None
        left_out = [t.rid for t in s.ready() if t.rid not in decoded]
        return f"ready request(s) {left_out[:5]} got no token; the budget of {budget} covers all {s.num_ready}"
    if f.chunks or f.admitted:
        return f"prefill ran while {s.num_ready - len(decoded)} ready request(s) got no token"
    owed = longest_waiting(s, budget)
    missing = [rid for rid in owed if rid not in decoded]
    if missing:
        since = {rid: s.last_token.get(rid) for rid in missing[:3]}
        return (
            f"ready request(s) {missing[:5]} waited longest (last token at step {since}) but got no token; "
            f"the decodes went to {sorted(decoded)[:5]}"
        )
    return None


def decode_wait(s: Shadow, f: StepFacts) -> str | None:
    """DECODE-WAIT, judged once the step is done: every ready request skipped this step is within its
    run's bound ceil(R/B) - 1."""
    assert isinstance(s, BudgetShadow)
    budget = s.config.token_budget
    for track in s.ready():
        rid = track.rid
        if rid in f.emitted_set:
            continue
        run = s.runs.get(rid)
        steps = 1 if run is None else run.steps + 1
        num_ready = s.num_ready if run is None else run.num_ready
        min_budget = budget if run is None else min(run.min_budget, budget)
        bound = Run(steps, num_ready, min_budget).bound
        if steps > bound:
            return (
                f"ready rid {rid} has gone {steps} steps in a row without a token; with {num_ready} ready at the "
                f"run's start and budget {min_budget}, the bound is ceil({num_ready}/{min_budget}) - 1 = {bound}"
            )
    return None


BUDGET_CHANGE = Rule(
    "BUDGET-CHANGE", Kind.INPUT,
    "set_budget(B) between steps accepts every int B >= 1, taking effect at the next schedule(), and refuses "
    "any other value with ValueError or TypeError, nothing changed.")
DECODE_FAIR = Rule(
    "DECODE-FAIR", Kind.POLICY,
    "every step decodes every ready request the budget covers before any prefill token; when ready requests "
    "outnumber the budget B, the B decodes go to those that waited longest since their last token (ties: "
    "oldest admitted first).",
    plan_check=decode_fair)
DECODE_WAIT = Rule(
    "DECODE-WAIT", Kind.LIVENESS,
    "a ready request goes at most ceil(R/B) - 1 steps in a row without a token, R the ready requests in the "
    "run's first step and B the smallest budget during it.",
    done_check=decode_wait)


class BudgetMonitor(ContractMonitor):
    """The monitor, plus set_budget(B) and the shadow the fairness rules read."""

    def __init__(self, scheduler: Any, config: Config, rules: Iterable[str] | None, contract: Contract) -> None:
        super().__init__(scheduler, config, rules, contract)
        self.shadow = BudgetShadow(config)
        self._checks_budget = any(r.id == BUDGET_CHANGE.id for r in self.rules)
        self.num_budget_changes = 0  # accepted set_budget() calls
        self.num_budget_calls = 0  # set_budget() calls judged, refused ones included

    def set_budget(self, token_budget: object) -> bool:
        """Set the budget between steps. Returns True if accepted, False if (rightly) refused; raises
        RuleViolation('BUDGET-CHANGE') if the scheduler accepts what it must refuse or the reverse."""
        if self._pending is not None:
            raise RuntimeError("Monitor.set_budget() called between plan() and complete()")
        try:
            check_int("token_budget", token_budget)
            verdict = None
        except (InvalidField, FieldTypeError) as error:
            verdict = str(error)
        raised: BaseException | None = None
        try:
            self.scheduler.set_budget(token_budget)
        except (ValueError, TypeError) as error:
            raised = error
        except AttributeError as error:
            raise RuleViolation(PROTOCOL, self.shadow.step, f"the scheduler has no set_budget(): {error}") from None
        call = f"set_budget({token_budget!r})"
        self.num_budget_calls += 1
        if self._checks_budget:
            step = self.shadow.step
            if verdict is not None and raised is None:
                raise RuleViolation(BUDGET_CHANGE.id, step, f"{call} accepted a value it must refuse: {verdict}")
            if verdict is None and raised is not None:
                raise RuleViolation(BUDGET_CHANGE.id, step, f"{call} refused a valid budget: {raised}")
        if raised is not None or verdict is not None:
            return False
        self.shadow.config = replace(self.shadow.config, token_budget=token_budget)  # type: ignore[arg-type]
        self.config = self.shadow.config
        self.num_budget_changes += 1
        return True

    def complete(self, stopped: Iterable[int] = ()) -> StepFacts:
        shadow = self.shadow
        assert isinstance(shadow, BudgetShadow)
        ready = shadow.ready()
        num_ready, budget = shadow.num_ready, shadow.config.token_budget
        facts = super().complete(stopped)
        for track in ready:
            rid = track.rid
            if rid in facts.emitted_set:
                shadow.last_token[rid] = facts.step
                shadow.runs.pop(rid, None)
                continue
            run = shadow.runs.get(rid)
            if run is None:
                shadow.runs[rid] = Run(1, num_ready, budget)
            else:
                run.steps += 1
                run.min_budget = min(run.min_budget, budget)
        for chunk in facts.prefills:
            if chunk.track.is_ready and chunk.track.rid in facts.emitted_set:
                shadow.last_token[chunk.track.rid] = facts.step
        for track in facts.finished:  # its last token, a stop, or a cancel while the plan was pending
            shadow.forget(track.rid)
        return facts

    def cancel(self, rid: object) -> bool:
        """`Monitor.cancel`; a request it ends at once (no plan pending, or still waiting) leaves no
        record, so a new request reusing its rid starts with no last token and no run (DECODE-FAIR,
        DECODE-WAIT). One cancelled while a plan is pending ends, and is forgotten, at complete()."""
        accepted = super().cancel(rid)
        shadow = self.shadow
        assert isinstance(shadow, BudgetShadow)
        if type(rid) is int and rid not in shadow.tracks:
            shadow.forget(rid)
        return accepted


# The reference's rules with a budget that may change: oldest-first decodes when they do not all fit.
BUDGET_CONTRACT = Contract(
    "budget-change", keeping(extra=(BUDGET_CHANGE,)), monitor=BudgetMonitor,
    scheduler="stallfree.variants.batched:BatchedResizable", faults="stallfree.faults.budget:BUDGET_FAULTS",
    carries=frozenset({STOPS, BUDGETS}), policies=(("resizable", "stallfree.variants.batched:BatchedResizable"),),
)
# Rotation: DECODE-FIRST gives way to DECODE-FAIR, with its bound DECODE-WAIT.
ROTATION_CONTRACT = Contract(
    "rotation", keeping("DECODE-FIRST", extra=(BUDGET_CHANGE, DECODE_WAIT, DECODE_FAIR)),
    widens=(("DECODE-FIRST", "DECODE-FAIR"),), monitor=BudgetMonitor,
    scheduler="stallfree.variants.rotating:BatchedRotating", faults="stallfree.faults.budget:BUDGET_FAULTS",
    carries=frozenset({STOPS, BUDGETS}), policies=(("rotating", "stallfree.variants.rotating:BatchedRotating"),),
)
