"""LIVENESS's bound from LIVENESS-STEPS's ranking, for any N: the step the ranking proves, repeated,
brings every request to its end within floor(P / B) + D steps of its arrival.

The ranking (`liveness_induction`, any N) is a fact about one step: for a waiting or running r, over r
and the requests before it, neither P (prompt positions left) nor D (tokens left) grows, and D falls
by 1 or P by B (`liveness_steps.falls`). Two theorems turn it into the bound, each proved here by
induction in Z3 (initiation, consecution, exit). They are an arithmetic lemma and a separately proved
fact, **joined on paper**, not in Z3: in `sequence`, P, D, U (r unfinished) and A are uninterpreted
functions of the step, and its exit takes "D(T) = 0 means r is not unfinished at T" as a hypothesis
(`ended`); `zero_work` proves that fact of the ranking's own prefix sums (P0, D0) at one state. No Z3
formula says that D(t) is the D0 prefix sum of the state at step t, that U(t) is "r waiting or
running" there, or that the state at step t + 1 is the one the step leaves from the state at step t
after the adds. That join rests on the premises (the chains keep, at every step, the per-request
parts zero work reads and the ranking's premise) and on ADD (an arrival joins behind r, so it adds
nothing to r's group): `liveness_any_n.ASSUMES` lists it.

- **the sequence** (`sequence`): P and D are sequences over the steps t = 0, 1, ... (the values at the
  start of step t; the budget B >= 1 fixed), non-negative (each request's share is: `zero_work`'s
  invariant), and `falls` holds of every step t at which
  r is unfinished. A(t), "r unfinished at every step before t", is defined by its recurrence. Then
  the measure M(t) = P(t) + B * D(t) falls by at least B a step while A holds, M(t) <= M(0) - B * t;
  at T = floor(P(0) / B) + D(0), A(T) gives M(T) <= P(0) mod B < B, so D(T) = 0, and a request whose
  group has no tokens left has ended (the next theorem): r is unfinished at no step after T.
- **zero work left is the end** (`zero_work`): over arrays of any N, with each request's per-request
  parts (`Requests.valid_at`: TYPES, FIRST-TOKEN), D = 0 over r's group (the prefix sum the ranking
  reads, `liveness_loops`) means r has ended (admitted, every token out) and P = 0 too, so M(T) = 0.

What the sequence assumes of the behaviour, beside the ranking: the budget is fixed (a changing budget,
`mutants.ChangingBudget`, breaks READY-WITHIN-BUDGET first); the premise of the ranking holds at each
step (kept for any N by the PER-REQUEST, FCFS, PARTIAL-YOUNGEST and KV chains); arrivals join behind r
(ADD: an accepted request is last in line, nobody else moves), so P(t) and D(t), read after step t's
adds, are what step t - 1 left; and the executor keeps stepping (weak fairness of Step, which is
always enabled: nothing more is assumed of the environment).
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from .induction import INT, Obligation
from .liveness_loops import ranking_chain, recurrences
from .liveness_steps import falls
from .policy import Policy

Falls = Callable[[z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.ArithRef], z3.BoolRef]


def sequence(ranking: Falls = falls, sooner: int = 0) -> list[Obligation]:
    """The sequence theorem: a non-negative measure P + B * D that `ranking` lowers by B a step reaches
    D = 0 within floor(P(0) / B) + D(0) steps, where (by `zero_work`) r has ended. `sooner`: claim the
    end that many steps earlier (a test shows one step earlier refuted: the bound is the least)."""
    p, d = z3.Function("P", INT, INT), z3.Function("D", INT, INT)
    unfinished, before = z3.Function("U", INT, z3.BoolSort()), z3.Function("A", INT, z3.BoolSort())
    b, t = z3.Int("B"), z3.Int("t")
    deadline = p(0) / b + d(0) - sooner  # floor: P(0) >= 0, B >= 1

    def measure(at: z3.ArithRef) -> z3.ArithRef:
        return p(at) + b * d(at)

    def bounded(at: z3.ArithRef) -> z3.BoolRef:
        return z3.Implies(before(at), measure(at) <= measure(0) - b * at)

    def nonnegative(at: z3.ArithRef) -> z3.BoolRef:
        return z3.And(p(at) >= 0, d(at) >= 0)

    base = z3.And(b >= 1, before(0), nonnegative(0))
    # A(t + 1) = A(t) and U(t): r unfinished at steps 0 .. t. The case A(t + 1) false leaves bounded(t + 1)
    # true, so the consecution takes A(t + 1): then r is unfinished at t and the ranking's step applies.
    ranked = z3.Implies(unfinished(t), ranking(p(t), p(t + 1), d(t), d(t + 1), b))
    step = z3.And(base, t >= 0, bounded(t), before(t + 1) == z3.And(before(t), unfinished(t)), before(t + 1),
                  nonnegative(t), nonnegative(t + 1), ranked)
    # `zero_work`'s conclusion at step T, taken as a hypothesis: its D0 and this D are one quantity on paper only
    ended = z3.Implies(d(deadline) == 0, z3.Not(unfinished(deadline)))
    at_deadline = z3.And(base, deadline >= 0, bounded(deadline), nonnegative(deadline), ended)
    exit_goal = z3.Implies(before(deadline), z3.Not(unfinished(deadline)))
    return [Obligation("sequence: initiation", base, bounded(z3.IntVal(0))),
            Obligation("sequence: consecution", step, bounded(t + 1), t == 0),
            Obligation("sequence: the bound, floor(P / B) + D steps", at_deadline, exit_goal)]


def zero_work() -> list[Obligation]:
    """Over r's group (indexes 0 .. m, any N): D = 0 means r has ended and P = 0. The invariant at each
    prefix: P and D are non-negative, and D = 0 there means P = 0 there."""
    c = ranking_chain(Policy())  # only its requests and prefix sums are read: no policy's step
    i, m = c.i, z3.Int("m")

    def p0(at: z3.ArithRef) -> z3.ArithRef:  # the ranking's own prefix sums, before the step
        return c.c("P0", at)

    def d0(at: z3.ArithRef) -> z3.ArithRef:
        return c.c("D0", at)

    def inv(at: z3.ArithRef) -> z3.BoolRef:
        return z3.And(p0(at) >= 0, d0(at) >= 0, z3.Implies(d0(at) == 0, p0(at) == 0))

    base = z3.And(c.config.valid(), c.n >= 0, p0(z3.IntVal(0)) == 0, d0(z3.IntVal(0)) == 0)
    step = z3.And(base, i >= 0, i < c.n, inv(i), c.reqs.valid_at(i, c.config), recurrences(c, ("P0", "D0"), i))
    r = c.reqs.at(m)
    end = z3.And(base, m >= 0, m < c.n, inv(m), c.reqs.valid_at(m, c.config), recurrences(c, ("P0", "D0"), m))
    return [Obligation("zero work: initiation", base, inv(z3.IntVal(0))),
            Obligation("zero work: consecution", step, inv(i + 1), i == 0),
            Obligation("zero work: D = 0 means r has ended", z3.And(end, r.arrived, d0(m + 1) == 0),
                       z3.And(r.finished, z3.Not(r.waiting), z3.Not(r.running), p0(m + 1) == 0))]


def bound(ranking: Falls = falls) -> list[Obligation]:
    """Both theorems' obligations, the sequence first."""
    return [*sequence(ranking), *zero_work()]
