"""Theorems about the code that runs: the scheduler's own `schedule()`, `complete()`, `cancel()` and
views, executed on symbolic values (`symexec`) from every state of N requests its post-conditions
allow (`symstate`), every path exhausted.

For every shape of at most N requests (how many ready, partial, waiting) and every choice of the
environment (the stops, among every subset of the requests; the request cancelled), Z3 walks every
feasible path of: build the state, require the reference's post-conditions of it (the hypothesis), run
the transition, check the claims (`code_claims`). Lengths, max_new, budget, slots, KV, the free KV
and the step count are unbounded integers; N bounds only how many requests the state holds. A theorem
holds when no path breaks a claim; it is BROKEN with the path's values (a concrete state) otherwise;
unknown if Z3 could not decide a branch or the path count ran past its bound.

Since the hypothesis is the post-conditions and every transition ends by checking them, the three
theorems together show the post-conditions inductive over the code's own transitions at N: every
state a sequence of steps, stops and cancels reaches satisfies them (adds are the states' waiting
requests: any that add() takes).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import z3

from stallfree.reference import postconditions
from stallfree.reference.views import Views
from stallfree.spec.errors import FieldTypeError, InvalidField, ProtocolError
from stallfree.spec.phase import Phase
from stallfree.spec.verdict import Verdict

from . import code_claims
from .code_claims import Claim
from .symexec import Explorer, explore, variables
from .symstate import Shape, build, home, names, shapes, type_assumptions

DEFAULT_N = 3  # requests per state: every shape of at most 3 (`stallfree prove`; --requests raises it)
MAX_PATHS = 200_000  # per shape and choice: past it the theorem is unknown (a count, not seconds)

Transition = Callable[[Any, Claim, range], None]


def step(stopped: tuple[int, ...]) -> Transition:
    """schedule(), then complete(plan, stopped): the plan's rules, each request's life, the invariant."""

    def run(s: Any, claim: Claim, rids: range) -> None:
        before = code_claims.views(s, rids)
        plan = s.schedule()
        code_claims.invariant(claim, s, "schedule()")
        code_claims.plan_rules(claim, s, before, plan)
        planned = code_claims.views(s, rids)
        try:
            emitted = s.complete(plan, stopped) if stopped else s.complete(plan)
        except ProtocolError:
            _refused_stop(claim, s, rids, planned, plan, stopped)
            return
        claim("TOKENS", set(stopped) <= set(emitted), f"complete() took stops {stopped} of rids that emit nothing")
        after = code_claims.views(s, rids)
        code_claims.life(claim, before, after, plan, tuple(emitted), stopped)
        code_claims.kv_view(claim, s, after)
        code_claims.ranking(claim, before, after, bool(plan.entries))
        code_claims.invariant(claim, s, f"complete(plan, stopped={list(stopped)})")

    return run


def _refused_stop(claim: Claim, s: Any, rids: range, planned: code_claims.Views, plan: Any,
                  stopped: tuple[int, ...]) -> None:
    """A refused stop names a rid that emits nothing in the plan, and changes nothing."""
    given = {e.rid: e.n for e in plan}
    shown = planned.progress
    silent = [rid for rid in stopped if shown[rid] is None or (shown[rid].phase is not Phase.READY and (
        shown[rid].phase is Phase.WAITING or given.get(rid, 0) != shown[rid].prompt_len - shown[rid].num_prefilled))]
    claim("TOKENS", bool(silent), f"complete() refused stops {stopped}, each of which emits a token")
    now = code_claims.views(s, rids)
    claim("TOKENS", (now.waiting, now.running, now.ended) == (planned.waiting, planned.running, planned.ended),
          "a refused complete() moved a request")
    for rid, p in planned.progress.items():
        q = now.progress[rid]
        if p is not None and q is not None:
            claim("TOKENS", q.phase is p.phase and bool(q.num_prefilled == p.num_prefilled)
                  and bool(q.num_emitted == p.num_emitted), f"a refused complete() changed rid {rid}")


def cancel(victim: int, pending: bool) -> Transition:
    """cancel(victim) between steps, or while the plan of a step is pending (then complete(plan))."""

    def run(s: Any, claim: Claim, rids: range) -> None:
        before = code_claims.views(s, rids)
        plan = s.schedule() if pending else None
        s.cancel(victim)
        code_claims.invariant(claim, s, f"cancel({victim})")
        _refused(claim, s, rids, victim)
        if plan is None:
            after = code_claims.views(s, rids)
            _cancelled_now(claim, before, after, victim)
            code_claims.kv_view(claim, s, after)
            return
        waited = victim in {r.rid for r in s.running}  # running: it ends when the plan completes
        if not waited:  # waiting: it leaves now, and its record lasts until the step completes
            shown = s.progress(victim)
            claim("CANCEL", shown.phase is Phase.CANCELLED,
                  f"rid {victim}, cancelled waiting, shows {shown.phase.value}")
            before.progress[victim] = None
        emitted = s.complete(plan)
        after = code_claims.views(s, rids)
        claim("CANCEL", victim not in {e.rid for e in plan} or waited, f"rid {victim} was planned and left at once")
        code_claims.life(claim, before, after, plan, tuple(emitted), cancelled=(victim,) if waited else ())
        code_claims.kv_view(claim, s, after)
        code_claims.invariant(claim, s, "complete(plan) after the cancel")

    return run


def _refused(claim: Claim, s: Any, rids: range, victim: int) -> None:
    refused_cancels(claim, s, rids, victim, lambda s, rids: _moved(code_claims.views(s, rids)),
                    "a refused cancel moved a request")


def _moved(v: code_claims.Views) -> tuple[Any, ...]:
    return v.waiting, v.running, v.ended


def refused_cancels(claim: Claim, s: Any, rids: range, victim: int, shown: Callable[[Any, range], Any],
                    changed: str) -> None:
    """CANCEL: a second cancel of the same request, and a cancel of a rid never added, raise and change
    nothing `shown` shows (`changed` says what moved otherwise)."""
    before = shown(s, rids)
    for rid in (victim, len(rids)):
        try:
            s.cancel(rid)
        except InvalidField:
            continue
        claim("CANCEL", False, f"cancel({rid}) was accepted after cancel({victim}) (a repeat, or a rid never added)")
    claim("CANCEL", shown(s, rids) == before, changed)


def _cancelled_now(claim: Claim, before: code_claims.Views, after: code_claims.Views, victim: int) -> None:
    """A cancel between steps: the request shows CANCELLED, leaves its line, and nobody else moves."""
    p = after.progress[victim]
    claim("CANCEL", p is not None and p.phase is Phase.CANCELLED, f"rid {victim} does not show cancelled")
    claim("FCFS", after.waiting == tuple(r for r in before.waiting if r != victim),
          f"the line {before.waiting} became {after.waiting} on cancelling {victim}")
    claim("CANCEL", after.running == tuple(r for r in before.running if r != victim),
          f"the running requests {before.running} became {after.running} on cancelling {victim}")
    for rid, p0 in before.progress.items():
        if rid != victim and p0 is not None:
            p1 = after.progress[rid]
            claim("CANCEL", p1 is not None and p1.phase is p0.phase and bool(p1.num_emitted == p0.num_emitted)
                  and bool(p1.num_prefilled == p0.num_prefilled), f"cancelling {victim} moved rid {rid}")


@dataclass(frozen=True, slots=True)
class Theorem:
    name: str
    what: str
    choices: Callable[[Shape], Iterator[tuple[str, Transition]]]


def _stop_choices(shape: Shape) -> Iterator[tuple[str, Transition]]:
    rids = range(shape.size)
    for k in range(shape.size + 1):
        for stopped in combinations(rids, k):
            yield f"stops {list(stopped)}", step(stopped)


def _cancel_choices(shape: Shape) -> Iterator[tuple[str, Transition]]:
    for victim in range(shape.size):
        for pending in (False, True):
            yield f"cancel({victim}){' while a plan is pending' if pending else ''}", cancel(victim, pending)


def _plain_step(shape: Shape) -> Iterator[tuple[str, Transition]]:
    yield "no stops", step(())


THEOREMS: tuple[Theorem, ...] = (
    Theorem("STEP (code)", "schedule() then complete(plan): every rule of the plan, each request's life, "
            "the post-conditions", _plain_step),
    Theorem("STOPS (code)", "schedule() then complete(plan, stopped), stopped any subset of the requests",
            lambda shape: (c for c in _stop_choices(shape) if c[0] != "stops []")),
    Theorem("CANCEL (code)", "cancel(rid) of any request, between steps or while its step's plan is pending",
            _cancel_choices),
)


@dataclass(slots=True)
class Outcome:
    """A code theorem's result, as the other Z3 outcomes: holds, BROKEN (a path broke a rule) or unknown."""

    theorem: str
    verdict: Verdict
    seconds: float
    paths: int = 0  # paths run in all
    states: int = 0  # of them, paths from a state the post-conditions allow (the hypothesis held)
    counterexample: dict[str, Any] | None = None
    detail: str = ""
    broken: list[str] = field(default_factory=list)  # the rules broken, in the order found

    def tally(self, undecided: list[str], where: str, runs: list[Any], ex: Explorer | None, complete: bool) -> None:
        """Count one exploration's paths, and note in `undecided` why it cannot be claimed whole."""
        self.paths += len(runs)
        self.states += sum(r is not None for r in runs)
        if not complete or (ex is not None and ex.unknown):
            undecided.append(f"{where}: " + ("paths past the bound" if not complete
                                            else f"{ex.unknown} branches undecided"))

    def found(self, rule: str, message: str, values: dict[str, int], shape: str, choice: str | None = None) -> None:
        """A path broke `rule`: record the rule, and the first such path as the counterexample."""
        if rule not in self.broken:
            self.broken.append(rule)
        if self.counterexample is None:
            where = shape if choice is None else f"{shape} ({choice})"
            self.counterexample = {"rule": rule, "shape": shape, **({} if choice is None else {"choice": choice}),
                                   "values": values}
            self.detail = f"{rule}: {message}; from {where}, {values}"


def _values(ex: Explorer, v: dict[str, z3.ArithRef]) -> dict[str, int]:
    return {name: ex.model.eval(term, model_completion=True).as_long() for name, term in v.items()}


def allowed_state(make: Callable[[], Any]) -> Any:
    """The scheduler `make` builds on this path, or None where the path's values give no state the
    reference can be in: the build refuses them, or the state breaks a post-condition (the
    hypothesis fails on this path)."""
    try:
        s = make()
    except InvalidField:
        return None
    return None if postconditions.broken(s) is not None else s


def _path(ex: Explorer, cls: type, shape: Shape, v: dict[str, z3.ArithRef], transition: Transition) -> Any:
    """One run: None if the state is none of the scheduler's (the hypothesis fails on this path), else
    the claims it breaks, each as (rule, message, the path's values)."""
    s = allowed_state(lambda: build(cls, shape, v, ex))
    if s is None:
        return None
    found: list[tuple[str, str]] = []

    def claim(rule: str, ok: Any, message: str) -> None:
        if not ok:
            found.append((rule, message))

    try:
        transition(s, claim, range(shape.size))
    except (FieldTypeError, InvalidField, ProtocolError, AssertionError, KeyError, ValueError, IndexError) as error:
        rule = str(error).split(":")[0] if str(error).split(":")[0].isupper() else "PROTOCOL"
        found.append((rule, f"the code raised {type(error).__name__}: {str(error)[:200]}"))
    return [(rule, message, _values(ex, v)) for rule, message in found]


def prove(theorem: Theorem, cls: type, n: int = DEFAULT_N, max_paths: int = MAX_PATHS) -> Outcome:
    """Every path of `theorem`'s transitions of `cls`'s code, from every state of at most `n` requests."""
    started = time.perf_counter()
    out = Outcome(theorem.name, Verdict.UNKNOWN, 0.0)  # holds only once every path has kept every claim
    undecided = []
    for shape in shapes(n):
        v = variables(names(shape))
        for choice, transition in theorem.choices(shape):
            try:
                runs, ex, complete = explore(lambda ex, s=shape, v=v, t=transition: _path(ex, cls, s, v, t),
                                             type_assumptions(v, shape), max_paths)
            except TypeError as error:  # an operation symbolic values do not support: nothing is claimed
                undecided.append(f"{shape.label()}, {choice}: the code cannot run symbolically ({error})")
                continue
            out.tally(undecided, f"{shape.label()}, {choice}", runs, ex, complete)
            for rule, message, values in (f for r in runs if r for f in r):
                out.found(rule, message, values, shape.label(), choice)
    return settled(out, undecided, started)


def settled(out: Outcome, undecided: list[str], started: float) -> Outcome:
    """`out`'s verdict once every path ran: BROKEN with a counterexample; unknown where a path was not
    decided or no state satisfied the hypothesis; else holds."""
    out.seconds = time.perf_counter() - started
    if out.counterexample is not None:
        out.verdict = Verdict.BROKEN
    elif undecided or out.states == 0:
        out.verdict, out.detail = Verdict.UNKNOWN, "; ".join(undecided) or "no state satisfied the hypothesis"
    else:
        out.verdict = Verdict.HOLDS
        out.detail = f"{out.paths} paths, {out.states} from states the post-conditions allow, every one kept"
    return out


FIELDS = frozenset(Views.__annotations__)  # the reference's state, as `reference/views.py` declares it


def not_applicable(factory: Any) -> str | None:
    """Why the code theorems cannot speak of `factory`'s scheduler, or None: they build its state in
    the reference's fields, so its class must keep exactly those (a field more would be left at its
    initial value in every symbolic state, and the theorem would cover only those states)."""
    if not isinstance(factory, type):
        return "the scheduler is made by a function, not a class: its state cannot be built symbolically"
    try:
        s = factory(1, 1, 1)
    except Exception as error:
        return f"its constructor failed: {type(error).__name__}"
    held = set(getattr(s, "__dict__", {})) | {n for c in type(s).__mro__ for n in getattr(c, "__slots__", ())
                                              if hasattr(s, n)}
    if held != FIELDS:
        extra, missing = sorted(held - FIELDS), sorted(FIELDS - held)
        return f"its state is not the reference's fields (more: {extra}; missing: {missing})"
    if home(factory) is None:
        return "neither its module nor a base class's has a Sequence class to hold a request"
    return None
