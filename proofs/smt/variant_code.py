"""Theorems about the variants' own code: a variant's `schedule()`, `complete()` and `cancel()`, in
either rendering (`Stepwise`, `Batched`), executed on symbolic values (`symexec`) from every state of
N requests its post-conditions allow (`variant_state`), every path exhausted, as `code_theorems`
does for the reference.

For every layout of at most N requests (how many ready, partial, waiting; a waiting request's
priority level) and every choice of the environment (the stops, among every subset of the requests;
the request cancelled, between steps or with a plan pending), Z3 walks every feasible path of: build
the variant's state, require its post-conditions (the hypothesis), run the transition, check the
theorem's claims (`variant_claims`, `variant_rules`) and the post-conditions again. Lengths, max_new,
budget, slots, KV, the free KV, the step count, arrivals and last tokens are unbounded integers.

- STEP (code): schedule() then complete(plan): every plan rule of the variant's contract that is
  stated here (those of `RULES` it keeps, those it widens or adds), each request's life.
- END (code): complete(plan, stopped) for any stops, and complete(plan) after a cancel while it was
  pending: a request ends exactly on its max_new-th token, its stop, or the step completing its plan
  after a cancel, and its KV is back (free KV = K less the running reservations).
- STOP-READY (code): complete(plan, stopped) takes a stop exactly when each rid in it emits a token
  in the step, and a refused one changes nothing.
- CANCEL (code): cancel(rid) of any request, between steps or with a plan pending: a waiting one
  leaves its line at once (the others keep their order), a running one ends now or when the pending
  plan completes, its KV back, and is never planned again; a repeat, or a rid never added, is refused.

A theorem holds when no path breaks a claim, is BROKEN with the path's values otherwise, unknown if
Z3 could not decide a branch, the path count ran past its bound, or the code left the fragment (the
path it could not run is named).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import z3

from stallfree.spec.contract import Contract
from stallfree.spec.errors import FieldTypeError, InvalidField, ProtocolError
from stallfree.spec.verdict import Verdict

from . import variant_rules
from .code_theorems import Outcome, refused_cancels, settled
from .symexec import Explorer, explore, variables
from .symstate import Shape
from .variant_claims import ENDED, Claim, emits, kv_view, life, plan_rules, views
from .variant_state import Layout, broken, build, layouts, names, pending, type_assumptions

MAX_PATHS = 200_000  # per layout and choice: past it the theorem is unknown (a count, not seconds)
LIFE = frozenset({"TOKENS", "PREFILL-ONCE", "FIRST-TOKEN", "END", "KV", "PROGRESS"})


@dataclass(slots=True)
class Context:
    """What a transition judges: `claim` (the theorem's rules only), `hold` (the post-conditions,
    always), the variant's contract and plan rules."""

    claim: Claim
    hold: Claim
    contract: Contract
    fixed_budget: bool
    plan: bool  # the theorem judges the contract's plan rules
    own: dict[str, Any] = field(default_factory=dict)

    def invariant(self, s: Any, when: str) -> None:
        found = broken(s, self.fixed_budget)
        if found is not None:
            self.hold(found[0], False, f"after {when}: {found[1]}")


Transition = Callable[[Any, Context, range], None]


def step(stopped: tuple[int, ...]) -> Transition:
    """schedule(), then complete(plan, stopped)."""

    def run(s: Any, ctx: Context, rids: range) -> None:
        before = views(s, rids)
        order = variant_rules.order(s, before, ctx.contract)
        plan = s.schedule()
        if ctx.plan:
            plan_rules(ctx.claim, s, before, order, plan, set(ctx.contract.ids), ctx.own)
        planned = views(s, rids)
        due = [rid for rid, n in plan if before.seen.get(rid) is not None and emits(before.seen[rid], n)]
        try:
            emitted = s.complete(plan, stopped) if stopped else s.complete(plan)
        except (FieldTypeError, InvalidField, ProtocolError):
            ctx.claim("STOP-READY", any(rid not in due for rid in stopped), f"complete() refused stops {stopped}, "
                      f"each of which emits a token (due: {due})")
            ctx.claim("STOP-READY", views(s, rids) == planned and pending(s),
                      "a refused complete() changed the variant")
            return
        ctx.claim("STOP-READY", all(rid in due for rid in stopped), f"complete() took stops {stopped}; due: {due}")
        ctx.claim("STOP-READY", set(stopped) <= set(emitted), f"stops {stopped} of rids not emitted ({emitted})")
        after = views(s, rids)
        life(ctx.claim, before, after, plan, tuple(emitted), stopped)
        kv_view(ctx.claim, s, after)
        ctx.invariant(s, f"complete(plan, stopped={list(stopped)})")

    return run


def cancel(victim: int, pending: bool) -> Transition:
    """cancel(victim) between steps (then the next schedule()), or while the plan of a step is pending
    (then complete(plan))."""

    def run(s: Any, ctx: Context, rids: range) -> None:
        before = views(s, rids)
        plan = s.schedule() if pending else None
        running = victim in s.running  # admitted by the pending plan, it is running
        s.cancel(victim)
        _refused(ctx.claim, s, rids, victim)
        if plan is None:
            after = views(s, rids)
            _cancelled_now(ctx.claim, before, after, victim)
            kv_view(ctx.claim, s, after)
            ctx.invariant(s, f"cancel({victim})")
            planned = {rid for rid, _ in s.schedule()}
            ctx.claim("CANCEL", victim not in planned, f"rid {victim} planned after its cancel")
            return
        if not running:  # waiting: it leaves now, before the step completes
            now = views(s, rids)
            ctx.claim("CANCEL", now.seen[victim].place == ENDED, f"rid {victim}, cancelled waiting, still waits")
            before.seen[victim] = now.seen[victim]
        emitted = s.complete(plan)
        after = views(s, rids)
        life(ctx.claim, before, after, plan, tuple(emitted), cancelled=(victim,) if running else ())
        kv_view(ctx.claim, s, after)
        ctx.invariant(s, "complete(plan) after the cancel")

    return run


def _refused(claim: Claim, s: Any, rids: range, victim: int) -> None:
    refused_cancels(claim, s, rids, victim, views, "a refused cancel changed the variant")


def _cancelled_now(claim: Claim, before: Any, after: Any, victim: int) -> None:
    """A cancel between steps: the request ends, leaves its line or the running set, nobody else moves."""
    claim("CANCEL", after.seen[victim].place == ENDED, f"rid {victim} is {after.seen[victim].place} after its cancel")
    claim("CANCEL", after.line == tuple(tuple(r for r in q if r != victim) for q in before.line),
          f"the line {before.line} became {after.line} on cancelling {victim}")
    claim("CANCEL", after.running == tuple(r for r in before.running if r != victim),
          f"the running requests {before.running} became {after.running} on cancelling {victim}")
    claim("CANCEL", all(after.seen[rid] == seen for rid, seen in before.seen.items() if rid != victim),
          f"cancelling {victim} moved another request")


@dataclass(frozen=True, slots=True)
class Theorem:
    name: str
    what: str
    rules: frozenset[str]  # the claims it judges (with `plan`, every plan rule of the contract too)
    choices: Callable[[Shape], Iterator[tuple[str, Transition]]]
    plan: bool = False  # it judges the contract's plan rules as well


def _stops(shape: Shape) -> Iterator[tuple[str, Transition]]:
    for k in range(1, shape.size + 1):
        for stopped in combinations(range(shape.size), k):
            yield f"stops {list(stopped)}", step(stopped)


def _cancels(pending: tuple[bool, ...]) -> Callable[[Shape], Iterator[tuple[str, Transition]]]:
    def choices(shape: Shape) -> Iterator[tuple[str, Transition]]:
        for victim in range(shape.size):
            for p in pending:
                yield f"cancel({victim}){' while a plan is pending' if p else ''}", cancel(victim, p)
    return choices


def _ends(shape: Shape) -> Iterator[tuple[str, Transition]]:
    yield from _stops(shape)
    yield from _cancels((True,))(shape)


THEOREMS: tuple[Theorem, ...] = (
    Theorem("STEP (code)", "schedule() then complete(plan): the contract's plan rules stated here, each "
            "request's life, the post-conditions", LIFE, lambda shape: iter([("no stops", step(()))]), plan=True),
    Theorem("END (code)", "a request ends exactly on its max_new-th token, its stop, or the step completing "
            "its plan after a cancel, its KV back", frozenset({"END", "KV"}), _ends),
    Theorem("STOP-READY (code)", "complete(plan, stopped) takes a stop exactly when each rid in it emits a "
            "token in the step; a refused one changes nothing", frozenset({"STOP-READY"}), _stops),
    Theorem("CANCEL (code)", "cancel(rid), between steps or with a plan pending: the request leaves its "
            "line or ends, its KV back, never planned again; a repeat or an unknown rid refused",
            frozenset({"CANCEL", "KV", "END"}), _cancels((False, True))),
)


def _values(ex: Explorer, v: dict[str, z3.ArithRef]) -> dict[str, int]:
    return {name: ex.model.eval(term, model_completion=True).as_long() for name, term in v.items()}


def _path(ex: Explorer, make: Callable[[], Any], layout: Layout, v: dict[str, z3.ArithRef],
          transition: Transition, theorem: Theorem, contract: Contract, fixed_budget: bool) -> Any:
    """One run: None where the state is none of the variant's (the hypothesis fails on this path),
    else the claims it breaks, each as (rule, message, the path's values)."""
    try:
        s = build(make, layout, v, ex)
    except InvalidField:
        return None
    if broken(s, fixed_budget) is not None:
        return None
    found: list[tuple[str, str]] = []
    judged = theorem.rules | (set(contract.ids) if theorem.plan else set())

    def claim(rule: str, ok: Any, message: str) -> None:
        if rule in judged and not ok:
            found.append((rule, message))

    def hold(rule: str, ok: Any, message: str) -> None:
        if not ok:
            found.append((rule, message))

    ctx = Context(claim, hold, contract, fixed_budget, theorem.plan, variant_rules.own(contract, s))
    try:
        transition(s, ctx, range(layout.shape.size))
    except (FieldTypeError, InvalidField, ProtocolError, AssertionError, KeyError, ValueError, IndexError) as error:
        found.append(("PROTOCOL", f"the code raised {type(error).__name__}: {str(error)[:200]}"))
    return [(rule, message, _values(ex, v)) for rule, message in found]


def prove(theorem: Theorem, make: Callable[[], Any], contract: Contract, n: int, fixed_budget: bool = True,
          max_paths: int = MAX_PATHS) -> Outcome:
    """Every path of `theorem`'s transitions of the variant `make` builds, judged under `contract`, from
    every state of at most `n` requests (`fixed_budget`: READY-WITHIN-BUDGET among the hypotheses)."""
    started = time.perf_counter()
    out = Outcome(theorem.name, Verdict.UNKNOWN, 0.0)
    undecided: list[str] = []
    for layout in layouts(make, n):
        v = variables(names(make, layout))
        for choice, transition in theorem.choices(layout.shape):
            where = f"{layout.label()}, {choice}"
            try:
                runs, ex, complete = explore(
                    lambda ex, lay=layout, v=v, t=transition: _path(ex, make, lay, v, t, theorem, contract,
                                                                   fixed_budget),
                    type_assumptions(v, layout), max_paths)
            except TypeError as error:  # an operation symbolic values do not support: nothing is claimed
                undecided.append(f"{where}: the code cannot run symbolically ({error})")
                continue
            out.tally(undecided, where, runs, ex, complete)
            for rule, message, values in (f for r in runs if r for f in r):
                out.found(rule, message, values, layout.label(), choice)
    return settled(out, undecided, started)
