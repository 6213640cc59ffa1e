"""The monitor: an independent shadow model that watches any scheduler through the plain protocol
and raises `RuleViolation` (rule ID, step, the facts) on the first broken rule.

It is the oracle: written from the rules, it shares no decision logic with the reference. It never
asks the scheduler what it would do; it only judges what it did.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import InvalidField, RuleViolation
from .facts import StepFacts, apply, observe, observe_emitted
from .rules import Rule, never_fit, select
from .shadow import Shadow
from .types import Config, Request, admissible


def refusal(shadow: Shadow, rid: object, prompt_len: object, max_new: object) -> str | None:
    """Why the contract refuses add(rid, prompt_len, max_new) in this state, or None to accept."""
    try:
        request = admissible(Request(rid, prompt_len, max_new), shadow.config)  # type: ignore[arg-type]
    except (InvalidField, TypeError) as error:
        return str(error)
    if shadow.is_taken(request.rid):
        return f"rid {request.rid} is already taken by an earlier request"
    return None


class Monitor:
    """Drives `scheduler` (plain protocol) under `config`, checking `rules` (all when None)."""

    def __init__(self, scheduler: Any, config: Config, rules: Iterable[str] | None = None) -> None:
        self.scheduler = scheduler
        self.config = config
        self.shadow = Shadow(config)
        self.rules: tuple[Rule, ...] = select(rules)
        self._plan_checks = [(r.id, r.plan_check) for r in self.rules if r.plan_check]
        # Once a step is done, the token rules are judged before KV's return check: a wrong token
        # count makes a reservation come back on the wrong step, and the token rule is the cause.
        done = [(r.id, r.done_check) for r in self.rules if r.done_check]
        self._done_checks = sorted(done, key=lambda check: check[0] == "KV")
        self._checks_add = any(r.id == "NEVER-FIT" for r in self.rules)
        self.num_steps = 0  # steps checked
        self.num_busy_steps = 0  # of which with a non-empty plan
        self.num_adds = 0  # add() calls judged
        self._pending: tuple[object, StepFacts] | None = None

    @property
    def checks_per_step(self) -> int:
        return len(self._plan_checks) + len(self._done_checks)

    @property
    def is_idle(self) -> bool:
        """Nothing waiting or running, by the contract's account."""
        return self.shadow.is_idle

    def add(self, rid: object, prompt_len: object, max_new: object) -> bool:
        """Offer a request. Returns True if accepted, False if (rightly) refused; raises
        RuleViolation('NEVER-FIT') if the scheduler accepts what it must refuse or the reverse."""
        shadow = self.shadow
        verdict = refusal(shadow, rid, prompt_len, max_new)
        raised: BaseException | None = None
        try:
            self.scheduler.add(rid, prompt_len, max_new)
        except Exception as error:  # judged below; anything but ValueError/TypeError on a valid
            if verdict is None and not isinstance(error, ValueError | TypeError):
                raise  # request is a crash of the scheduler, not a refusal
            raised = error
        self.num_adds += 1
        if self._checks_add:
            message = never_fit(verdict, raised)
            if message is not None:
                raise RuleViolation("NEVER-FIT", shadow.step, f"add({rid!r}, {prompt_len!r}, {max_new!r}): {message}")
        if raised is None:
            try:
                shadow.accept(Request(rid, prompt_len, max_new))  # type: ignore[arg-type]
            except (InvalidField, TypeError) as error:
                raise RuleViolation(
                    "PROTOCOL", shadow.step, f"add({rid!r}, {prompt_len!r}, {max_new!r}) was accepted "
                    f"but the request cannot be followed: {error}",
                ) from None
            return True
        if type(rid) is int:
            shadow.rejected.add(rid)
        return False

    def plan(self) -> object:
        """Ask the scheduler for a plan and judge it before it runs. Returns the plan as given."""
        if self._pending is not None:
            raise RuntimeError("Monitor.plan() called twice without complete()")
        shadow = self.shadow
        plan = self.scheduler.schedule()
        facts = observe(shadow, plan)
        for rule_id, check in self._plan_checks:
            message = check(shadow, facts)
            if message is not None:
                raise RuleViolation(rule_id, shadow.step, message)
        self._pending = (plan, facts)
        return plan

    def complete(self) -> StepFacts:
        """Tell the scheduler the pending plan ran, judge what it reports, and advance the shadow."""
        if self._pending is None:
            raise RuntimeError("Monitor.complete() called without a pending plan")
        plan, facts = self._pending
        self._pending = None
        shadow = self.shadow
        emitted = self.scheduler.complete(plan)
        observe_emitted(shadow, facts, emitted, getattr(self.scheduler, "free_kv", None))
        for rule_id, check in self._done_checks:
            message = check(shadow, facts)
            if message is not None:
                raise RuleViolation(rule_id, shadow.step, message)
        apply(shadow, facts)
        self.num_steps += 1
        if facts.plan:
            self.num_busy_steps += 1
        return facts

    def step(self) -> StepFacts:
        """One step: plan, judge, complete, judge."""
        self.plan()
        return self.complete()
