"""Wrong Z3 policies planted for `LIVENESS (induction, any N)` (`liveness_any_n`), beside the starving
`mutants.LifoAdmission`: each keeps every step busy or looks like the reference one request at a time,
yet a request can wait past its bound.

- `ShortestFirst` admits the waiting request with the shortest prompt first (ties: the oldest): a
  stream of short prompts keeps a long one waiting (the short-over-long starver).
- `IdleOneInThree` is the reference but plans nothing every third step, by its own step counter
  (`faults.starving.IdleOneInThree` in the transcription; the counter is a symbol the state leaves
  free, so a theorem over every state meets all three of its phases).
- `ReversedPartials` gives partial prompts their chunks newest first: not the fold of its body, but
  the invariant allows one partial at most, so the ranking holds at N = 3 and the row stays unknown.

Four more break a premise of the row while (a) and (b) hold, so the row must read unknown naming it:
- `NeverRelease` never gives a finished request's KV back: once K is spent nothing is admitted again
  (KV and FINISH break).
- `ZeroStart` starts with no free KV: nothing is ever admitted (INIT breaks).
- `ShrinkingBudget` leaves a budget of 1 after each step: every request ends, but not within its
  floor(P / B) + D (the config fixed breaks).
- `ShrinkingKV` leaves K = 1 after each step, the budget as it was: nothing is admitted again (the
  config fixed breaks; the budget alone, all BUDGET FIXED checked before, holds).

Three more the row passed while one link of its argument was read, not proved, each refuted now by
that link's obligations (`liveness_init`, `liveness_join`):
- `BusyPastTwelve` starts a request at index 12 or later already admitted, its KV not reserved: INIT
  at N = 12 holds, INIT (any N) fails at the pair 11, 12 and at its KV consecution (the third link).
- `JoinAhead` lets an add() place a request ahead of one already in line (no index order): the adds
  then give r's group work it did not have (the second link).
- `ForgetOnAdd` lets an add() take back a request that is waiting (it leaves, never served): r's work
  drops to 0 without r's end, which the old reading of "not waiting or running" took for an end (the
  first link: the sequence's end is zero work's "finished", of the same terms).

Two more the join passed while it read r only as the first of its pair, and the adds only on two
requests, each refuted now (`liveness_join.adds`, `liveness_join.pairwise`):
- `ForgetLast` lets an add() take back the last request of the state while it waits: on a pair, only
  its second place; r last in line (m = N - 1) is never served.
- `WideJoinAhead` is the reference on two requests or fewer and `JoinAhead` on three or more: its adds
  place a request ahead of r only where a pair cannot show it.

Two more override `step` itself, which the row never runs (its loops run the phase methods, its
completion is the shared `Chain.after`): the row reads them not judged, never holds.
- `IdleStep`: its `step` plans nothing and changes nothing; every phase method is the reference's.
- `IdleStepPastTwelve`: the reference's `step` on twelve requests or fewer, IdleStep's beyond.

Two more have a phase FOLD's frame refuses (an `if len(...)` before its loop), so FOLD ties their
phases to the loops only at N = 2 .. 4 (`fold_induction.premises`' fallback): the row reads them
unknown naming it, never holds.
- `LifoPastFour`: the reference's admission on four requests or fewer, newest first on five or more.
- `IdlePastFour`: the reference's decodes on four requests or fewer; on five or more none, and no
  budget left: every step idles.

Three more change in add() what the join read as the step left it, each refuted now by the adds'
obligations (`liveness_adds`):
- `DrainOnAdd`: add() leaves no free KV; `BudgetOneOnAdd`: add() lowers the budget to 1 (the config
  and the free KV left).
- `ShortJumpOnAdd`: add() admits a short new request at once, its KV not reserved (the ranking's
  premise kept: no request admitted by an add).

`FreshPrompt` is correct, a control: its add() draws a new request's lengths as it takes it; the row
must not refute it (each call of `arrive` is named on its own).
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from .mutants import LifoAdmission
from .policy import Draft, Policy, SymEntry, SymStep, smin
from .symbolic import SymConfig, SymRequest, SymState


class ShortestFirst(Policy):
    """Admits the waiting request with the shortest prompt first, the oldest among equals; admission
    stops at the first it picks that does not fit."""

    breaks = "LIVENESS"

    def admit(self, s: SymState, d: Draft) -> None:
        reqs = s.requests
        taken = [z3.BoolVal(False)] * len(reqs)
        for _ in reqs:  # one pick a round: the shortest waiting request not picked yet
            pick = [z3.And(_open(r, taken[i]), *(z3.Implies(_open(q, taken[j]), _before(r, i, q, j))
                                                 for j, q in enumerate(reqs) if j != i)) for i, r in enumerate(reqs)]
            for i, r in enumerate(reqs):
                go = z3.And(pick[i], z3.Not(d.stopped), self.fits(r, s, d))
                n = d.let("first_chunk", z3.If(go, smin(r.prompt_len, d.left), 0))
                d.admit[i], d.first_chunk[i] = z3.Or(d.admit[i], go), d.first_chunk[i] + n
                d.left = d.let("left", d.left - n)
                d.num_running = d.let("num_running", d.num_running + z3.If(go, 1, 0))
                d.free_kv = d.let("free_kv", d.free_kv - z3.If(go, r.reservation, 0))
                d.stopped = z3.Or(d.stopped, z3.And(pick[i], z3.Not(go)))
                d.num_admitted = d.num_admitted + z3.If(go, 1, 0)
                taken[i] = z3.Or(taken[i], pick[i])


def _open(r: SymRequest, taken: z3.BoolRef) -> z3.BoolRef:
    return z3.And(r.waiting, z3.Not(taken))


def _before(r: SymRequest, i: int, q: SymRequest, j: int) -> z3.BoolRef:
    """r (index i) goes before q (index j): a shorter prompt, or as long and older."""
    return z3.Or(r.prompt_len < q.prompt_len, z3.And(r.prompt_len == q.prompt_len, z3.BoolVal(i < j)))


IDLE_PERIOD = 3
NUM_STEPS = z3.Int("idler.num_steps")  # the idler's own step counter: hidden state no claim constrains


class IdleOneInThree(Policy):
    """The reference, but on a step whose counter is 2 modulo 3 each phase plans nothing, whatever waits."""

    breaks = "LIVENESS"

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        _unless_idle(super().plan_decodes, s, d)

    def plan_partials(self, s: SymState, d: Draft) -> None:
        _unless_idle(super().plan_partials, s, d)

    def admit(self, s: SymState, d: Draft) -> None:
        _unless_idle(super().admit, s, d)


DRAFTED = ("decode", "chunk", "admit", "first_chunk")  # the plan's lists
CARRIED = ("left", "num_running", "free_kv", "stopped", "num_admitted")  # what a phase hands the next


def _unless_idle(phase: Callable[[SymState, Draft], None], s: SymState, d: Draft) -> None:
    """`phase` on the draft, undone (each field back to what it was) on an idle step."""
    idle = NUM_STEPS % IDLE_PERIOD == IDLE_PERIOD - 1
    lists = {name: list(getattr(d, name)) for name in DRAFTED}
    values = {name: getattr(d, name) for name in CARRIED}
    phase(s, d)
    for name, was in lists.items():
        setattr(d, name, [z3.If(idle, old, new) for old, new in zip(was, getattr(d, name), strict=True)])
    for name, was in values.items():
        setattr(d, name, z3.If(idle, was, getattr(d, name)))


class ReversedPartials(Policy):
    """Gives the partial prompts their chunks newest first: not the fold of its body once two are
    partial, but the invariant allows one partial at most, so the ranking holds at N = 3."""

    def plan_partials(self, s: SymState, d: Draft) -> None:
        for i in reversed(range(len(s.requests))):
            r = s.requests[i]
            n = d.let("chunk", z3.If(z3.And(r.partial, d.left > 0), self.chunk(r, d.left), 0))
            d.chunk[i] = n
            d.left = d.let("left", d.left - n)


class NeverRelease(Policy):
    """Keeps every reservation: a finished request's KV never comes back."""

    breaks = "KV"

    def releases(self, entry: SymEntry, r: SymRequest, num_prefilled: z3.ArithRef, num_emitted: z3.ArithRef,
                 tokens: z3.ArithRef) -> z3.BoolRef:
        return z3.BoolVal(False)


class ZeroStart(Policy):
    """A new scheduler starts with no KV free."""

    breaks = "INIT"

    def initial_free_kv(self, config: SymConfig) -> z3.ArithRef:
        return z3.IntVal(0)


class ShrinkingBudget(Policy):
    """The budget after every step is 1 (still a valid budget)."""

    breaks = "LIVENESS"

    def after_config(self, config: SymConfig) -> SymConfig:
        return SymConfig(z3.IntVal(1), config.max_seqs, config.kv_tokens)


PHANTOM_FROM = 12  # the first index BusyPastTwelve starts admitted: one past INIT's N


class ShrinkingKV(Policy):
    """Leaves K = 1 after each step (the budget as it was): once a step has run, no request fits, so
    nothing waiting is admitted again."""

    breaks = "LIVENESS"

    def after_config(self, config: SymConfig) -> SymConfig:
        return SymConfig(config.token_budget, config.max_seqs, z3.IntVal(1))


class BusyPastTwelve(Policy):
    """A new scheduler holds, at each index from 12 on, a request admitted and running whose KV it
    never reserved."""

    breaks = "INIT"

    def initial_at(self, r: SymRequest, index: z3.ArithRef) -> z3.BoolRef:
        phantom = z3.And(r.arrived, r.admitted, r.num_prefilled == 0, r.num_emitted == 0, r.prompt_len >= 1,
                         r.max_new >= 1)
        return z3.If(index >= PHANTOM_FROM, phantom, super().initial_at(r, index))


class JoinAhead(Policy):
    """add() may place a new request at any free index, ahead of requests already in line."""

    breaks = "FCFS"

    def arrive(self, before: SymState, name: str) -> tuple[SymState, z3.BoolRef]:
        after, _ = super().arrive(before, name)
        facts = [z3.Implies(b.arrived, a.arrived) for b, a in zip(before.requests, after.requests, strict=True)]
        return after, z3.And([*facts, *(z3.Implies(a.arrived, self.accepts(a, before.config)) for a in after.requests)])


class ForgetOnAdd(Policy):
    """add() may take back a request still waiting: it leaves the line unserved."""

    breaks = "LIVENESS"

    def arrive(self, before: SymState, name: str) -> tuple[SymState, z3.BoolRef]:
        after, _ = super().arrive(before, name)
        facts = [z3.Implies(z3.And(b.arrived, b.admitted), a.arrived) for b, a in zip(before.requests, after.requests,
                                                                                    strict=True)]
        facts += [z3.Implies(after.requests[i + 1].arrived, after.requests[i].arrived) for i in range(len(facts) - 1)]
        return after, z3.And([*facts, *(z3.Implies(a.arrived, self.accepts(a, before.config)) for a in after.requests)])


class ForgetLast(Policy):
    """add() may take back the last request of the state while it waits; every other request stays."""

    breaks = "LIVENESS"

    def arrive(self, before: SymState, name: str) -> tuple[SymState, z3.BoolRef]:
        after, _ = super().arrive(before, name)
        was, now = before.requests, after.requests
        facts = [z3.Implies(b.arrived, a.arrived) for b, a in zip(was[:-1], now[:-1], strict=True)]
        facts.append(z3.Implies(z3.And(was[-1].arrived, was[-1].admitted), now[-1].arrived))
        facts += [z3.Implies(now[i + 1].arrived, now[i].arrived) for i in range(len(now) - 1)]
        return after, z3.And([*facts, *(z3.Implies(a.arrived, self.accepts(a, before.config)) for a in now)])


WIDE_FROM = 3  # the fewest requests on which WideJoinAhead's adds leave index order


class WideJoinAhead(JoinAhead):
    """The reference's add() on two requests or fewer; on three or more, JoinAhead's (any free index)."""

    def arrive(self, before: SymState, name: str) -> tuple[SymState, z3.BoolRef]:
        if len(before.requests) < WIDE_FROM:
            return Policy.arrive(self, before, name)
        return super().arrive(before, name)


class IdleStep(Policy):
    """The reference's phases, but its own `step` plans nothing and leaves the state as it was: no
    request ever finishes, while every phase method is the reference's."""

    breaks = "LIVENESS"

    def step(self, s: SymState, d: Draft | None = None) -> SymStep:
        d = Draft(s) if d is None else d
        nothing = SymEntry(z3.BoolVal(False), z3.IntVal(0), z3.BoolVal(False), z3.IntVal(0))
        return SymStep(s, tuple(nothing for _ in s.requests), tuple(z3.BoolVal(False) for _ in s.requests), s,
                       s.free_kv, z3.And(d.defs))


IDLE_STEP_FROM = 13  # the fewest requests on which IdleStepPastTwelve's step is IdleStep's


class IdleStepPastTwelve(IdleStep):
    """The reference's `step` on twelve requests or fewer (every fixed-N theorem's N), IdleStep's beyond."""

    def step(self, s: SymState, d: Draft | None = None) -> SymStep:
        if len(s.requests) < IDLE_STEP_FROM:
            return Policy.step(self, s, d)
        return super().step(s, d)


FOLD_PAST = 4  # the most requests on which LifoPastFour and IdlePastFour are the reference (FOLD's fallback N)


class LifoPastFour(LifoAdmission):
    """The reference's admission on four requests or fewer; newest first (LifoAdmission's) on five or more."""

    def admit(self, s: SymState, d: Draft) -> None:
        if len(s.requests) <= FOLD_PAST:
            return Policy.admit(self, s, d)
        return LifoAdmission.admit(self, s, d)


class IdlePastFour(Policy):
    """The reference's decodes on four requests or fewer; on five or more no decode, and no budget left
    for the phases after: every step idles."""

    breaks = "LIVENESS"

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        if len(s.requests) <= FOLD_PAST:
            return Policy.plan_decodes(self, s, d)
        d.left = z3.IntVal(0)


class DrainOnAdd(Policy):
    """add() leaves no free KV (every request as the reference's add() leaves it): once anything has
    arrived, nothing is admitted again."""

    breaks = "LIVENESS"

    def arrive(self, before: SymState, name: str) -> tuple[SymState, z3.BoolRef]:
        after, facts = super().arrive(before, name)
        return SymState(after.config, after.requests, z3.IntVal(0)), facts


class BudgetOneOnAdd(Policy):
    """add() lowers the token budget to 1 (its `after_config` is the reference's): every request ends,
    but past floor(P / B) + D for the B it arrived under."""

    breaks = "LIVENESS"

    def arrive(self, before: SymState, name: str) -> tuple[SymState, z3.BoolRef]:
        after, facts = super().arrive(before, name)
        c = after.config
        return SymState(SymConfig(z3.IntVal(1), c.max_seqs, c.kv_tokens), after.requests, after.free_kv), facts


SHORT_PROMPT = 2  # the longest prompt ShortJumpOnAdd's add() admits at once


class ShortJumpOnAdd(Policy):
    """add() admits a newly arrived request with a short prompt at once, its KV not reserved: short
    arrivals after a waiting long r run (partials and decodes come before admission) ahead of it."""

    breaks = "LIVENESS"

    def arrive(self, before: SymState, name: str) -> tuple[SymState, z3.BoolRef]:
        after, facts = super().arrive(before, name)
        jumps = [z3.And(a.arrived, z3.Not(b.arrived), a.prompt_len <= SHORT_PROMPT)
                 for b, a in zip(before.requests, after.requests, strict=True)]
        reqs = tuple(SymRequest(a.arrived, z3.Or(a.admitted, jump), a.prompt_len, a.max_new, a.num_prefilled,
                                a.num_emitted) for a, jump in zip(after.requests, jumps, strict=True))
        return SymState(after.config, reqs, after.free_kv), facts


class FreshPrompt(Policy):
    """Correct, a control: the reference, but add() chooses a new request's prompt length and max_new
    as it takes it (symbols of its own per call and index, at least 1, fitting K)."""

    def arrive(self, before: SymState, name: str) -> tuple[SymState, z3.BoolRef]:
        after, facts = super().arrive(before, name)
        reqs, chosen = [], []
        for i, (b, a) in enumerate(zip(before.requests, after.requests, strict=True)):
            prompt, most = z3.Int(f"{name}.r{i}.new_prompt"), z3.Int(f"{name}.r{i}.new_max")
            new = z3.And(a.arrived, z3.Not(b.arrived))
            reqs.append(SymRequest(a.arrived, a.admitted, z3.If(new, prompt, a.prompt_len),
                                   z3.If(new, most, a.max_new), a.num_prefilled, a.num_emitted))
            chosen += [prompt >= 1, most >= 1]
        chosen += [z3.Implies(r.arrived, self.accepts(r, before.config)) for r in reqs]
        return SymState(after.config, tuple(reqs), after.free_kv), z3.And(facts, *chosen)


PLANTED: dict[str, type[Policy]] = {cls.__name__: cls for cls in (
    ShortestFirst, IdleOneInThree, ReversedPartials, NeverRelease, ZeroStart, ShrinkingBudget, BusyPastTwelve,
    JoinAhead, ForgetOnAdd, ForgetLast, WideJoinAhead, IdleStep, IdleStepPastTwelve, LifoPastFour, IdlePastFour,
    DrainOnAdd, BudgetOneOnAdd, ShortJumpOnAdd, ShrinkingKV)}
CORRECT: dict[str, type[Policy]] = {cls.__name__: cls for cls in (FreshPrompt,)}  # controls the row must not refute
