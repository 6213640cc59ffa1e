"""The monitor: an independent shadow model that watches any scheduler through the plain protocol
and raises `RuleViolation` (rule ID, step, the facts) on the first broken rule.

It is the oracle: written from the rules, it shares no decision logic with the reference. It never
asks the scheduler what it would do; it only judges what it did.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..calls import call_judged
from ..ending import ENDED, Reason, ended_when
from ..errors import InvalidField, RuleViolation
from ..rule import Rule
from ..shown import visible
from ..types import MAX_INT, Config, Request, admissible
from ..watch import Watch, judge
from .facts import StepFacts, apply, due, observe, observe_emitted
from .ordinary import DONE_CHECKS, PLAN_CHECKS, Holds, done_holds, plan_holds, shortcut
from .rules import kv_owed_shown, select
from .shadow import Shadow


def refusal(shadow: Shadow, rid: object, prompt_len: object, max_new: object) -> str | None:
    """Why the contract refuses add(rid, prompt_len, max_new) in this state, or None to accept."""
    try:
        request = admissible(Request(rid, prompt_len, max_new), shadow.config)  # type: ignore[arg-type]
    except (InvalidField, TypeError) as error:
        return str(error)
    if shadow.is_taken(request.rid):
        return f"rid {request.rid} is already taken by an earlier request"
    return None


def plainly_accepted(shadow: Shadow, rid: object, prompt_len: object, max_new: object) -> bool:
    """True only where `refusal` returns None: three ints in range (as `Request` takes them), a reservation
    within K (NEVER-FIT), a rid no request that has not ended holds. False says nothing: `refusal` decides.
    One test where `refusal` builds a `Request` and calls two more (a checked simulation's every add)."""
    return type(rid) is int and type(prompt_len) is int and type(max_new) is int and 0 <= rid <= MAX_INT and \
        1 <= prompt_len <= MAX_INT and 1 <= max_new <= MAX_INT and prompt_len + max_new <= shadow.config.kv_tokens \
        and rid not in shadow.tracks


def cancel_refusal(shadow: Shadow, pending: StepFacts | None, rid: object) -> str | None:
    """Why the contract refuses cancel(rid) in this state (`pending`: the facts of a plan awaiting
    complete()), or None to accept: only a waiting or running request not already cancelled may be."""
    if type(rid) is not int:
        return f"rid must be an int, got {type(rid).__name__} {rid!r:.40}"
    if pending is not None and rid in pending.cancelled:
        return f"rid {rid} is already cancelled: it ends when the pending plan of step {pending.step} completes"
    if rid in shadow.tracks:
        return None
    ending = shadow.ended.get(rid)
    if ending is None:
        return f"rid {rid} was never added"
    return f"rid {rid} {ENDED[ending.reason]} {ended_when(ending)}"


class Monitor(Watch[Shadow, StepFacts]):
    """Drives `scheduler` (plain protocol) under `config`, checking `rules` (all when None)."""

    rules: tuple[Rule, ...]
    # The one-pass test that every plan (done) check holds on an ordinary step, or None where the
    # checks are not all RULES' own (`ordinary`): a step it does not show is judged check by check.
    plan_holds: Holds | None
    done_holds: Holds | None

    def __init__(self, scheduler: Any, config: Config, rules: Iterable[str] | None = None) -> None:
        self._start(scheduler, select(rules))
        self.config = config
        self.shadow = Shadow(config)

    def __copy__(self) -> Monitor:
        """What `copy.copy` makes (the scheduler and shadow shared), written out so that a compiled
        Monitor (scripts/compiled.sh) is copied too: a search that branches then gives the copy a
        scheduler and a shadow of its own (`proofs.explicit.snapshot.fork`)."""
        fields = getattr(self, "__dict__", None)
        if fields is not None:  # the Python core (a subclass too): each field as it is
            twin = object.__new__(type(self))
            twin.__dict__.update(fields)
            return twin
        # compiled: no rules built for the new monitor, since _carry gives it this one's rules and checks
        return self._carry(Monitor(self.scheduler, self.config, ()))

    def _watch(self, rules: tuple[Any, ...]) -> None:
        super()._watch(rules)
        self.plan_holds = shortcut(self._plan_checks, PLAN_CHECKS, plan_holds)
        self.done_holds = shortcut(self._done_checks, DONE_CHECKS, done_holds)

    def _carry(self, twin: Monitor) -> Monitor:
        """`twin`, a new Monitor on the same scheduler, brought to this one's point:
        its rules and their checks, counts, pending step and shadow (shared, as `copy.copy` shares them:
        the checks are only read)."""
        twin.rules, twin._plan_checks, twin._done_checks = self.rules, self._plan_checks, self._done_checks
        twin._checks_add = self._checks_add
        twin.plan_holds, twin.done_holds = self.plan_holds, self.done_holds
        twin.shadow = self.shadow
        twin.num_steps, twin.num_busy_steps, twin.num_adds = self.num_steps, self.num_busy_steps, self.num_adds
        twin._pending, twin._capabilities = self._pending, self._capabilities
        return twin

    @property
    def checks_per_step(self) -> int:
        return len(self._plan_checks) + len(self._done_checks)

    def refusal(self, rid: object, prompt_len: object, max_new: object) -> str | None:
        return refusal(self.shadow, rid, prompt_len, max_new)

    def plan(self) -> object:
        """Ask the scheduler for a plan and judge it before it runs. Returns the plan as given."""
        if self._pending is not None:
            raise RuntimeError("Monitor.plan() called twice without complete()")
        shadow = self.shadow
        owed, shadow.kv_owed = shadow.kv_owed, 0  # cancelled reservations: due by this schedule()
        return self.judged(self.scheduler.schedule(), owed)

    def judged(self, plan: object, owed: int = 0) -> object:
        """`plan`'s judgement as `plan` makes it, for a plan schedule() has already returned (a caller's shortcut
        that declined the step: `sim.cleansteps`), `owed` the cancelled reservations due by it. Returns it."""
        shadow = self.shadow
        facts = observe(shadow, plan)
        if owed:
            self._judge_owed(facts, owed)
        holds = self.plan_holds
        if holds is None or not holds(shadow, facts):
            judge(self._plan_checks, shadow, facts, shadow.step)
        self._pending = (plan, facts)
        return plan

    def _judge_owed(self, facts: StepFacts, owed: int) -> None:
        """KV at the first schedule() after cancels of running requests (`owed`, their reservations):
        a scheduler that shows free_kv has them back now, so it shows K minus the running
        reservations, with or without this plan's admissions (it may take those here or at complete())."""
        free_kv = getattr(self.scheduler, "free_kv", None)
        if type(free_kv) is not int or not any(r.id == "KV" for r in self.rules):
            return
        free = self.shadow.free_kv
        if free_kv not in (free, free - facts.admitted_reservation):
            admitted = f" ({free - facts.admitted_reservation} once this plan's admissions reserve theirs)" \
                if facts.admitted_reservation else ""
            raise RuleViolation(
                "KV", facts.step, f"schedule() after a cancel: the scheduler shows free_kv={free_kv}; the "
                f"reservations of running requests leave {free} free{admitted}: the {owed} KV tokens of the "
                f"cancelled request(s) are not back by the next schedule()")

    def cancel(self, rid: object) -> bool:
        """Cancel `rid`. Returns True if the scheduler accepted the cancel (returned), False if it
        refused it (raised); raises RuleViolation('CANCEL') if it accepts what it must refuse or the
        reverse (where CANCEL is checked), and ('KV') if, shown, its free KV is neither K minus the
        reservations still running after it nor that less the cancelled reservations not yet back
        (the contract wants those by the next schedule(); the step after it judges that they are).
        The shadow follows the contract: a cancel it refuses changes nothing there, whatever the
        scheduler did."""
        self.require("cancel")
        shadow, pending = self.shadow, self.pending
        verdict = cancel_refusal(shadow, pending, rid)
        raised: BaseException | None = None
        before = visible(self.scheduler)
        try:
            self.scheduler.cancel(rid)
        except Exception as error:  # judged below
            raised = error
        checks = {r.id for r in self.rules}
        if "CANCEL" in checks:
            call = f"cancel({rid!r})"
            message = call_judged(call, verdict, raised) or self._unchanged(call, before, raised)
            if message is not None:
                raise RuleViolation("CANCEL", shadow.step, message)
        if verdict is not None or raised is not None:
            return raised is None
        assert type(rid) is int  # a verdict of None says so
        track = shadow.tracks[rid]
        admitted_now = pending is not None and rid in pending.planned
        if pending is not None and (track.admitted_at is not None or admitted_now):
            pending.cancelled[rid] = track  # named in the pending plan: it ends when complete() runs
            return True
        shadow.end(track, Reason.CANCEL)
        if track.admitted_at is not None:  # a running request's reservation: due by the next schedule()
            shadow.kv_owed += track.request.reservation
        # (A waiting one, which pending cancels end here, holds none: a scheduler may take a pending
        # plan's admissions when it likes.)
        free_kv = getattr(self.scheduler, "free_kv", None)
        if "KV" in checks and pending is None and type(free_kv) is int:
            message = kv_owed_shown(shadow, free_kv, shadow.kv_owed)
            if message is not None:
                raise RuleViolation("KV", shadow.step, f"after cancel({rid}) {message}")
        return True

    def due(self) -> list[int]:
        """The rids the contract says emit a token in the pending step: those a stop may name."""
        facts = self.pending
        if facts is None:
            raise RuntimeError("Monitor.due() called without a pending plan")
        return [t.rid for t in due(facts)]

    def refuse_stop(self, stopped: Iterable[object]) -> None:
        """Offer complete(plan, stopped) with a stop the contract refuses (a rid that emits no token in
        the pending step): the scheduler must raise, saying why, and change nothing; the plan stays
        pending. Raises RuleViolation('TOKENS') if it accepts."""
        self.require("stop")
        facts = self.pending
        if facts is None:
            raise RuntimeError("Monitor.refuse_stop() called without a pending plan")
        stopped = tuple(stopped)
        allowed = set(self.due())
        bad = [rid for rid in stopped if rid not in allowed]
        if not bad:
            raise ValueError(f"refuse_stop({list(stopped)}): every rid is due a token this step; offer a bad one")
        verdict = f"rid {bad[0]!r} emits no token in step {facts.step}"
        raised: BaseException | None = None
        before = visible(self.scheduler)
        try:
            self.scheduler.complete(self._pending[0], stopped)  # type: ignore[index]
        except Exception as error:
            raised = error
        if any(r.id == "TOKENS" for r in self.rules):
            call = f"complete(plan, stopped={list(stopped)})"
            message = call_judged(call, verdict, raised) or self._unchanged(call, before, raised)
            if message is not None:
                raise RuleViolation("TOKENS", facts.step, message)

    def _unchanged(self, call: str, before: tuple[object, ...], raised: BaseException | None) -> str | None:
        """None if `call`, refused (`raised`), left what the scheduler shows as it was `before`."""
        after = visible(self.scheduler)
        if raised is None or after == before:
            return None
        return f"{call} was refused ({type(raised).__name__}: {raised}) but changed the state it shows: " \
               f"(free_kv, num_steps, waiting, running) {before} -> {after}"

    def complete(self, stopped: Iterable[int] = ()) -> StepFacts:
        """Tell the scheduler the pending plan ran, and that the requests in `stopped` (each due a token
        in this step: see `due`) stopped on it; judge what it reports, and advance the shadow."""
        if self._pending is None:
            raise RuntimeError("Monitor.complete() called without a pending plan")
        plan, facts = self._pending
        if stopped:
            stopped = tuple(stopped)
            self.require("stop")
            allowed = set(self.due())
            bad = [rid for rid in stopped if rid not in allowed]
            if bad:
                raise ValueError(f"Monitor.complete(stopped={list(stopped)}): rid {bad[0]!r} is not due a token "
                                 f"in step {facts.step} (due: {sorted(allowed)}); use refuse_stop to offer it")
            facts.stopped = frozenset(stopped)
        self._pending = None
        emitted = self.scheduler.complete(plan, stopped) if stopped else self.scheduler.complete(plan)
        return self._done(facts, emitted)

    def completed(self, emitted: object) -> StepFacts:
        """`complete()`'s judgement, with no stop, for the pending plan the scheduler has already completed,
        returning `emitted` (a caller's shortcut that declined the step: `sim.cleansteps`)."""
        if self._pending is None:
            raise RuntimeError("Monitor.completed() called without a pending plan")
        facts = self._pending[1]
        self._pending = None
        return self._done(facts, emitted)

    def _done(self, facts: StepFacts, emitted: object) -> StepFacts:
        shadow = self.shadow
        observe_emitted(shadow, facts, emitted, getattr(self.scheduler, "free_kv", None))
        holds = self.done_holds
        if holds is None or not holds(shadow, facts):
            judge(self._done_checks, shadow, facts, shadow.step)
        apply(shadow, facts)
        self.num_steps += 1
        if facts.plan:
            self.num_busy_steps += 1
        return facts
