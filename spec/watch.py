"""What every design's monitor does alike: the face the run loop, the kit and the model checker drive.

A monitor drives one scheduler through the protocol and judges each call against its design's rules.
The reservation design's `Monitor` and the paged design's `PagedMonitor` differ in their shadow, their
facts and what they judge; they share this: the capabilities read off the scheduler (stop, cancel),
the pending plan, the judgement of add() (rule NEVER-FIT, against the design's own refusal), running
a list of checks, and one step as plan then complete.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, Generic, TypeVar

from .calls import never_fit
from .capability import Unsupported, supports
from .errors import InvalidField, RuleViolation
from .types import Request
from .verdict import PROTOCOL

ShadowT = TypeVar("ShadowT")  # the design's shadow
FactsT = TypeVar("FactsT")  # the design's facts of one step

Check = tuple[str, Any]  # (rule ID, predicate of (shadow, facts) returning a message or None)


def judge(checks: Sequence[Check], shadow: Any, facts: Any, step: int) -> None:
    """Raise RuleViolation for the first of `checks` whose predicate reports a message."""
    for rule_id, check in checks:
        message = check(shadow, facts)
        if message is not None:
            raise RuleViolation(rule_id, step, message)


class Watch(ABC, Generic[ShadowT, FactsT]):
    """The part of a monitor that is the same for every design. A subclass sets `scheduler`, `shadow`
    (with `step`, `tracks`, `ended`, `rejected`, `is_idle`, `accept`), `_checks_add`, and defines
    `refusal`, `plan` and `complete`."""

    scheduler: Any
    shadow: ShadowT
    _checks_add: bool

    def _start(self, scheduler: Any, rules: tuple[Any, ...] = ()) -> None:
        self.scheduler = scheduler
        self._watch(rules)
        self.num_steps = 0  # steps checked
        self.num_busy_steps = 0  # of which with a non-empty plan
        self.num_adds = 0  # add() calls judged
        self._pending: tuple[object, FactsT] | None = None  # (the plan as given, its facts) until complete()
        self._capabilities: frozenset[str] | None = None

    def _watch(self, rules: tuple[Any, ...]) -> None:
        """Judge `rules` (the design's `Rule`s): their plan checks, their done checks and NEVER-FIT."""
        self.rules = rules
        self._plan_checks: list[Check] = [(r.id, r.plan_check) for r in rules if r.plan_check]
        # Once a step is done, the token rules are judged before KV's return check: a wrong token
        # count makes a reservation come back on the wrong step, and the token rule is the cause.
        done = [(r.id, r.done_check) for r in rules if r.done_check]
        self._done_checks: list[Check] = sorted(done, key=lambda check: check[0] == "KV")
        self._checks_add = any(r.id == "NEVER-FIT" for r in rules)
        self._premises: list[tuple[str, Any]] = [(r.id, r.premise) for r in rules if r.premise is not None]
        self.exercised: dict[str, int] = {rule_id: 0 for rule_id, _ in self._premises}  # rule -> premise count

    def count_premises(self, shadow: Any, facts: Any) -> None:
        """Count, once a step's checks are done, how often it reached each checked rule's premise."""
        for rule_id, premise in self._premises:
            self.exercised[rule_id] += premise.count(shadow, facts)

    @property
    def capabilities(self) -> frozenset[str]:
        """What the scheduler supports beyond the plain protocol: "stop", "cancel" (`capability`)."""
        if self._capabilities is None:
            self._capabilities = supports(self.scheduler)
        return self._capabilities

    def require(self, capability: str) -> None:
        """Raise Unsupported if the scheduler lacks `capability`."""
        if capability not in self.capabilities:
            raise Unsupported(capability, self.scheduler)

    @property
    def pending(self) -> FactsT | None:
        """The facts of the plan awaiting complete(), or None."""
        return None if self._pending is None else self._pending[1]

    @property
    def is_idle(self) -> bool:
        """Nothing waiting or running, by the contract's account."""
        shadow: Any = self.shadow  # every design's shadow has is_idle
        return bool(shadow.is_idle)

    @abstractmethod
    def refusal(self, rid: object, prompt_len: object, max_new: object) -> str | None:
        """Why the design's contract refuses add(rid, prompt_len, max_new) now, or None to accept."""

    def offer(self, rid: object, prompt_len: object, max_new: object) -> None:
        """Pass add() to the scheduler (a design whose requests carry more passes that too)."""
        self.scheduler.add(rid, prompt_len, max_new)

    def add(self, rid: object, prompt_len: object, max_new: object) -> bool:
        """Offer a request. Returns True if accepted, False if (rightly) refused; raises
        RuleViolation('NEVER-FIT') if the scheduler accepts what it must refuse or the reverse."""
        return self.offered(self.refusal(rid, prompt_len, max_new), rid, prompt_len, max_new)

    def offered(self, verdict: str | None, rid: object, prompt_len: object, max_new: object,
                request: Request | None = None) -> bool:
        """`add` once the contract's `verdict` on the request is known (`refusal`'s: None to accept):
        the offer to the scheduler, NEVER-FIT on what it did, and the shadow's accept. `request`: the
        request as the caller built it in showing `verdict` None (a shortcut that judged the add
        without `refusal`), else built here."""
        shadow: Any = self.shadow  # the class doc lists what every design's shadow has
        raised: BaseException | None = None
        try:
            self.offer(rid, prompt_len, max_new)
        except Exception as error:  # judged below; anything but ValueError/TypeError on a valid
            if verdict is None and not isinstance(error, ValueError | TypeError):
                raise  # request is a crash of the scheduler, not a refusal
            # Kept without its traceback: the traceback holds this frame, which holds `raised`, a cycle
            # that would keep the whole monitor and scheduler alive until the cyclic collector ran.
            raised = error.with_traceback(None)
        self.num_adds += 1
        if self._checks_add and (verdict is not None or raised is not None):  # else accepted as it must be
            message = never_fit(verdict, raised, may_refuse=type(rid) is int and rid in shadow.ended)
            if message is not None:
                raise RuleViolation("NEVER-FIT", shadow.step, f"add({rid!r}, {prompt_len!r}, {max_new!r}): {message}")
        if raised is None:
            try:
                shadow.accept(request if request is not None else Request(rid, prompt_len, max_new))  # type: ignore[arg-type]
            except (InvalidField, TypeError) as error:
                raise RuleViolation(
                    PROTOCOL, shadow.step, f"add({rid!r}, {prompt_len!r}, {max_new!r}) was accepted "
                    f"but the request cannot be followed: {error}",
                ) from None
            return True
        if type(rid) is int:
            shadow.rejected.add(rid)
        return False

    @abstractmethod
    def plan(self) -> object:
        """Ask the scheduler for a plan and judge it (the design's plan checks); return the plan."""

    @abstractmethod
    def complete(self, stopped: Iterable[int] = ()) -> FactsT:
        """Tell the scheduler the pending plan ran (with `stopped`), judge it, apply it; return its facts."""

    def step(self, stopped: Iterable[int] = ()) -> FactsT:
        """One step: plan, judge, complete (with `stopped`), judge."""
        self.plan()
        return self.complete(stopped)
