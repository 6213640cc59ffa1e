"""Coverage of the model check (as TLC reports it): for every claim, whether the case it is about was
reached, and on how many transitions. A rule judged on every transition holds vacuously where its
premise never arises: DECODE-FIRST's "oldest first" when ready requests never outnumber B, FCFS's order
when no step admits more than one. So each claim names the cases (`CASES`) in which it can fail, and a
claim whose case was never reached at a bound is reported vacuous there, not holding.

A case excluded by a state invariant (`Case.excluded_by`) cannot arise in any behaviour that keeps the
invariant, which the checker judges in every state (and Z3 proves for any step): such a clause is
implied by the invariant and reported so, never as exercised. Counts are of transitions explored,
each state's actions once (replays that rebuild a state are not counted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stallfree.spec import Config
from stallfree.spec.reservation.facts import StepFacts

from . import lifecycle


@dataclass(frozen=True, slots=True)
class Before:
    """What a case reads of the state before a transition (the monitor's shadow)."""

    num_ready: int
    num_partial: int
    num_running: int
    free_kv: int
    waiting: tuple[int, ...]  # the waiting requests' reservations, in arrival order


def before(shadow: Any) -> Before:
    return Before(shadow.num_ready, len(shadow.prefilling), len(shadow.running), shadow.free_kv,
                  tuple(t.request.reservation for t in shadow.waiting))


# A case's predicate: (the state before, the step's facts (None for an add or a call between steps), the
# action, the config) -> reached.
Reached = Callable[[Before, "StepFacts | None", Any, Config], bool]


@dataclass(frozen=True, slots=True)
class Case:
    claim: str  # a rule or state invariant ID
    name: str  # the case, in words
    reached: Reached
    excluded_by: str | None = None  # the invariant that rules the case out, where one does
    lifecycle: bool = False  # reachable only with stop and cancel actions


StepCheck = Callable[[Before, StepFacts, Config], bool]


class _OnStep:
    """A case reached only by a plain step: `check` of the state before and the step's facts."""

    __slots__ = ("check",)

    def __init__(self, check: StepCheck) -> None:
        self.check = check

    def __call__(self, b: Before, f: StepFacts | None, a: Any, c: Config) -> bool:
        return f is not None and self.check(b, f, c)


def _step(check: StepCheck) -> Reached:
    return _OnStep(check)


def _head_blocked(b: Before, f: StepFacts, c: Config) -> tuple[bool, bool]:
    """(blocked by slots, blocked by KV) for the first waiting request the step did not admit."""
    rest = b.waiting[len(f.admitted):]
    if not rest:
        return False, False
    running = b.num_running + len(f.admitted)
    return running >= c.max_seqs, running < c.max_seqs and rest[0] > b.free_kv - f.admitted_reservation


def _unused(f: StepFacts, c: Config) -> bool:
    return f.num_tokens < c.token_budget


def _ended_after_decoding(f: StepFacts) -> bool:
    """A request with max_new >= 2 ends on this step's token (the facts' tracks are read once applied)."""
    return any(t.request.max_new >= 2 and t.num_emitted == t.request.max_new for t in f.finished)


# The chunk cases, as loops: a generator per case and step costs more than the check (measured).
def _continues(f: StepFacts) -> bool:
    """A chunk starts past its prompt's first position."""
    return any(p.start > 0 for p in f.prefills)


def _leaves_unfinished(f: StepFacts) -> bool:
    return any(not p.completes for p in f.prefills)


def _completes(f: StepFacts) -> bool:
    return any(p.completes for p in f.prefills)


def _cut(f: StepFacts) -> bool:
    """A partial prompt's chunk (not an admission's) that the budget cut short."""
    return any(p.start > 0 and not p.completes for p in f.chunks)


def _action(kind: type) -> Reached:
    return lambda b, f, a, c: isinstance(a, kind)


CASES: tuple[Case, ...] = (
    Case("BUDGET", "a plan uses the whole budget", _step(lambda b, f, c: f.num_tokens == c.token_budget)),
    Case("ONE-ENTRY", "a plan of two or more entries", _step(lambda b, f, c: len(f.plan) >= 2)),
    Case("SLOTS", "the waiting head refused for want of a slot (every slot taken)",
         _step(lambda b, f, c: _head_blocked(b, f, c)[0])),
    Case("KV", "the waiting head refused for want of KV, a slot free",
         _step(lambda b, f, c: _head_blocked(b, f, c)[1])),
    Case("KV", "a reservation returned while others run",
         _step(lambda b, f, c: bool(f.finished) and b.num_running + len(f.admitted) > len(f.finished))),
    Case("PREFILL-ONCE", "a chunk continues a prompt", _step(lambda b, f, c: _continues(f))),
    Case("FIRST-TOKEN", "a chunk leaves its prompt unfinished",
         _step(lambda b, f, c: _leaves_unfinished(f))),
    Case("FIRST-TOKEN", "a chunk completes its prompt", _step(lambda b, f, c: _completes(f))),
    Case("TOKENS", "a decode", _step(lambda b, f, c: bool(f.decodes))),
    Case("TOKENS", "a request ends on its max_new-th token after decoding", _step(lambda b, f, c:
                                                                                 _ended_after_decoding(f))),
    Case("NEVER-FIT", "an add refused", lambda b, f, a, c: isinstance(a, tuple) and a[0] + a[1] > c.kv_tokens),
    Case("PROGRESS", "a step with work pending", _step(lambda b, f, c: b.num_running > 0 or bool(b.waiting))),
    Case("FCFS", "the waiting head blocked with a request behind it",
         _step(lambda b, f, c: len(b.waiting) > len(f.admitted) + 1 and any(_head_blocked(b, f, c)))),
    Case("FCFS", "three or more admitted in one step", _step(lambda b, f, c: len(f.admitted) >= 3)),
    Case("DECODE-FIRST", "a ready request and prefill work in one step",
         _step(lambda b, f, c: b.num_ready > 0 and (b.num_partial > 0 or bool(b.waiting)))),
    Case("DECODE-FIRST", "more ready requests than B (only the oldest B decoded)",
         _step(lambda b, f, c: b.num_ready > c.token_budget), excluded_by="READY-WITHIN-BUDGET"),
    Case("PARTIAL-NEXT", "a partial prompt at a step's start", _step(lambda b, f, c: b.num_partial > 0)),
    Case("PARTIAL-NEXT", "a partial prompt's chunk cut by the budget",
         _step(lambda b, f, c: _cut(f))),
    Case("PARTIAL-NEXT", "two partial prompts at once (oldest first)",
         _step(lambda b, f, c: b.num_partial >= 2), excluded_by="ONE-PARTIAL"),
    Case("WORK-CONSERVING", "budget unused, the waiting head blocked",
         _step(lambda b, f, c: _unused(f, c) and any(_head_blocked(b, f, c)))),
    Case("WORK-CONSERVING", "budget unused, nothing left waiting",
         _step(lambda b, f, c: _unused(f, c) and bool(f.plan) and len(b.waiting) == len(f.admitted))),
    Case("READY-WITHIN-BUDGET", "as many ready requests as B", _step(lambda b, f, c: b.num_ready == c.token_budget)),
    Case("ONE-PARTIAL", "a partial prompt while a request waits",
         _step(lambda b, f, c: b.num_partial > 0 and bool(b.waiting))),
    Case("TOKENS", "a stop accepted", _action(lifecycle.Stop), lifecycle=True),
    Case("TOKENS", "a stop of a rid that emits nothing refused", _action(lifecycle.BadStop), lifecycle=True),
    Case("CANCEL", "a waiting request cancelled", lambda b, f, a, c: isinstance(a, lifecycle.CancelNow)
         and a.index < len(b.waiting), lifecycle=True),
    Case("CANCEL", "a running request cancelled between steps", lambda b, f, a, c:
         isinstance(a, lifecycle.CancelNow) and a.index >= len(b.waiting), lifecycle=True),
    Case("CANCEL", "a request cancelled while its plan is pending", _action(lifecycle.CancelPending), lifecycle=True),
    Case("CANCEL", "a cancel of a rid never added refused", _action(lifecycle.CancelUnknown), lifecycle=True),
)


class Coverage:
    """Counts, per case of `CASES`, the transitions that reached it."""

    __slots__ = ("config", "counts", "off_step", "on_step", "with_lifecycle")

    def __init__(self, config: Config, with_lifecycle: bool) -> None:
        self.config = config
        self.with_lifecycle = with_lifecycle
        self.counts = [0] * len(CASES)
        # A transition that is not a plain step (an add, a stop, a cancel: no facts) reaches no case of
        # `_step`'s, so those are asked of steps alone, by their own check.
        self.on_step = [(i, c.reached.check) for i, c in enumerate(CASES) if isinstance(c.reached, _OnStep)]
        # A stop or cancel case is reached only by a stop or cancel action: not asked in a check without them.
        self.off_step = [(i, c.reached) for i, c in enumerate(CASES)
                         if not isinstance(c.reached, _OnStep) and (with_lifecycle or not c.lifecycle)]

    def count(self, b: Before, facts: StepFacts | None, action: Any) -> None:
        """One transition from a state read as `b`: `facts` of its step (or None), by `action`."""
        counts, config = self.counts, self.config
        if facts is not None:
            for i, check in self.on_step:
                if check(b, facts, config):
                    counts[i] += 1
        for i, reached in self.off_step:
            if reached(b, facts, action, config):
                counts[i] += 1

    def take(self) -> list[int]:
        """The counts so far, then zero (a worker sends its counts back per batch)."""
        counts, self.counts = self.counts, [0] * len(CASES)
        return counts

    def merge(self, counts: list[int]) -> None:
        for i, n in enumerate(counts):
            self.counts[i] += n

    def report(self) -> list[CaseReport]:
        return [CaseReport(c.claim, c.name, n, status(c, n, self.with_lifecycle)) for c, n in zip(CASES, self.counts,
                                                                                                  strict=True)]


REACHED, VACUOUS, EXCLUDED, NO_ACTION = "reached", "vacuous", "excluded", "not run"


def status(case: Case, count: int, with_lifecycle: bool) -> str:
    """reached; excluded (by its invariant: implied, not exercised); not run (a stop or cancel case in
    a check without those actions); else vacuous."""
    if count:
        return REACHED
    if case.excluded_by is not None:
        return EXCLUDED
    if case.lifecycle and not with_lifecycle:
        return NO_ACTION
    return VACUOUS


@dataclass(frozen=True, slots=True)
class CaseReport:
    claim: str
    case: str
    transitions: int
    status: str

    def line(self) -> str:
        why = next((c.excluded_by for c in CASES if c.claim == self.claim and c.name == self.case), None)
        said = {REACHED: f"{self.transitions:,} transitions", VACUOUS: "VACUOUS: never reached",
                EXCLUDED: f"never reached: excluded by {why} (implied, not exercised)",
                NO_ACTION: "not run (no stop or cancel actions at this bound)"}[self.status]
        return f"{self.claim}: {self.case}: {said}"

    def to_json(self) -> dict[str, Any]:
        return {"claim": self.claim, "case": self.case, "transitions": self.transitions, "status": self.status}


def vacuous_claims(report: list[CaseReport]) -> list[str]:
    """The claims with a case never reached (and not excluded), in `CASES` order."""
    out: list[str] = []
    for r in report:
        if r.status == VACUOUS and r.claim not in out:
            out.append(r.claim)
    return out
