"""LIVENESS's bound from LIVENESS-STEPS's ranking, for any N: the step the ranking proves, repeated,
brings every request to its end within floor(P / B) + D steps of its arrival.

The ranking (`liveness_induction`, any N) is a fact about one step: for a waiting or running r, over r
and the requests before it, neither P (prompt positions left) nor D (tokens left) grows, and D falls
by 1 or P by B (`liveness_steps.falls`). Three theorems turn it into the bound, each proved here by
induction in Z3 (initiation, consecution, exit), all over one behaviour's terms (`liveness_join`: the
state at step t an array over the steps, the ranking's prefix sums functions of the step): P(t) and
D(t) are r's group's P0 and D0 at step t, U(t) is "r waiting or running" there, the same terms the
ranking's rule (`liveness_induction.group_falls`) and zero work are stated over.

- **the sequence** (`sequence`): with the budget B >= 1 fixed, A(t), "r unfinished at every step
  before t", defined by its recurrence, the measure M(t) = P(t) + B * D(t) falls by at least B a step
  while A holds, M(t) <= M(0) - B * t, and r stays arrived. Its consecution's hypotheses are, at step
  t, the ranking's rule (P0, D0 to P1, D1 of step t), the join's "the adds keep r's group" (P0, D0 at
  t + 1 are P1, D1 at t) and "r stays arrived", and zero work's invariant (non-negative sums): each
  an instance of a statement proved for any step. At T = floor(P(0) / B) + D(0), A(T) gives M(T) <=
  P(0) mod B < B, so D(T) = 0, and with zero work's facts read at step T (its invariant at r's index,
  r's per-request parts, the sums' definitions) the exit proves zero work's end there: r has finished.
- **zero work left is the end** (`zero_work`): at any step, over arrays of any N, with each request's
  per-request parts (`Requests.valid_at`: TYPES, FIRST-TOKEN), D = 0 over r's group (the prefix sum
  the ranking reads, `liveness_loops`) means r has ended (admitted, every token out) and P = 0 too.
- **the join** (`liveness_join.join`): the adds keep arrivals in index order, r's group arrived, r
  arrived and its group's P and D (ADD: an arrival joins behind r), from the policy's own `arrive` read
  one adjacent pair at a time (that reading checked on three requests, assumed beyond); and that
  `arrive` leaves the config and free KV and keeps the ranking's premise (`liveness_adds`).

What the sequence assumes of the behaviour, beside these: the budget is fixed (a changing budget,
`mutants.ChangingBudget`, breaks READY-WITHIN-BUDGET first); the premise of the ranking holds at each
step (INIT (any N), `liveness_init`, at the first; kept for any N over a step by the PER-REQUEST, FCFS,
PARTIAL-YOUNGEST and KV chains, and over the adds by the join's `liveness_adds` obligations); and the
executor keeps stepping (weak fairness of Step, which is always enabled: nothing more is assumed of
the environment).
"""

from __future__ import annotations

import z3

from .chain import Chain
from .induction import Obligation
from .liveness_induction import group_falls
from .liveness_join import STEP, Behaviour, M, join, kept, stays
from .liveness_loops import recurrences
from .liveness_steps import Falls, falls
from .policy import Policy


def sequence(ranking: Falls = falls, sooner: int = 0, policy: Policy | None = None) -> list[Obligation]:
    """The sequence theorem over the behaviour's own terms (`liveness_join`): r's group's P + B * D,
    non-negative, lowered by B a step by the ranking's rule at that step, reaches D = 0 within
    floor(P(0) / B) + D(0) steps, where zero work's end at that step says r has finished. `sooner`:
    claim the end that many steps earlier (a test shows one step earlier refuted: the bound is the least)."""
    b = Behaviour.fresh(Policy() if policy is None else policy)
    before, t, budget = z3.Function("A", z3.IntSort(), z3.BoolSort()), STEP, b.config.token_budget
    p0, d0, _ = b.group(z3.IntVal(0))
    deadline = p0 / budget + d0 - sooner  # floor: P(0) >= 0, B >= 1

    def measure(at: z3.ArithRef) -> z3.ArithRef:
        p, d, _ = b.group(at)
        return p + budget * d

    def bounded(at: z3.ArithRef) -> z3.BoolRef:
        return z3.Implies(before(at), z3.And(measure(at) <= measure(z3.IntVal(0)) - budget * at, b.arrived(at, M)))

    def nonnegative(at: z3.ArithRef) -> z3.BoolRef:  # zero work's invariant over r's group at step `at`
        return _zero_inv(b.chain(at), M + 1)

    base = z3.And(b.config.valid(), M >= 0, b.n > M, before(0), b.arrived(z3.IntVal(0), M), nonnegative(z3.IntVal(0)))
    # A(t + 1) = A(t) and U(t): r unfinished at steps 0 .. t. The case A(t + 1) false leaves bounded(t + 1)
    # true, so the consecution takes A(t + 1): then r is unfinished at t and the ranking's rule applies.
    # The ranking's rule, the adds keeping r's group and r arrived: each an instance at step t of a
    # statement proved for any step (`liveness_induction.group_falls`, `liveness_join.kept`, `stays`).
    ranked = z3.Implies(b.group(t)[2], group_falls(b.chain(t), M, ranking))
    step = z3.And(base, t >= 0, bounded(t), before(t + 1) == z3.And(before(t), b.group(t)[2]), before(t + 1),
                  nonnegative(t), nonnegative(t + 1), kept(b, t, M + 1), stays(b, t), ranked)
    at_deadline = z3.And(base, deadline >= 0, bounded(deadline), nonnegative(deadline),
                         _zero_hypothesis(b.chain(deadline)))  # zero work's facts at step T: last
    exit_goal = z3.Implies(before(deadline), b.chain(deadline).reqs.at(M).finished)
    return [Obligation("sequence: initiation", base, bounded(z3.IntVal(0))),
            Obligation("sequence: consecution", step, bounded(t + 1), t == 0),
            Obligation("sequence: the bound, floor(P / B) + D steps", at_deadline, exit_goal)]


def _zero_inv(c: Chain, at: z3.ArithRef) -> z3.BoolRef:
    """Zero work's invariant at prefix `at`: P and D non-negative, and D = 0 there means P = 0 there."""
    p0, d0 = c.c("P0", at), c.c("D0", at)
    return z3.And(p0 >= 0, d0 >= 0, z3.Implies(d0 == 0, p0 == 0))


def _zero_base(c: Chain) -> z3.BoolRef:
    return z3.And(c.config.valid(), c.n >= 0, c.c("P0", z3.IntVal(0)) == 0, c.c("D0", z3.IntVal(0)) == 0)


def _zero_hypothesis(c: Chain) -> z3.BoolRef:
    """What zero work's end assumes at r's index, each proved for every step: the invariant there (zero
    work's induction), r's per-request parts (PER-REQUEST, a premise), the sums' definitions."""
    return z3.And(_zero_base(c), M >= 0, c.n > M, _zero_inv(c, M), c.reqs.valid_at(M, c.config),
                  recurrences(c, ("P0", "D0"), M))


def _zero_goal(c: Chain) -> z3.BoolRef:
    r = c.reqs.at(M)
    return z3.And(r.finished, z3.Not(r.waiting), z3.Not(r.running), c.c("P0", M + 1) == 0)


def zero_work(policy: Policy | None = None) -> list[Obligation]:
    """Over r's group (indexes 0 .. m, any N) at any step t of the behaviour: D = 0 means r has ended
    and P = 0. The invariant at each prefix: P and D are non-negative, and D = 0 there means P = 0 there."""
    b = Behaviour.fresh(Policy() if policy is None else policy)
    c = b.chain(STEP)
    i = c.i
    base = _zero_base(c)
    step = z3.And(base, i >= 0, i < c.n, _zero_inv(c, i), c.reqs.valid_at(i, c.config),
                  recurrences(c, ("P0", "D0"), i))
    end = z3.And(_zero_hypothesis(c), c.reqs.at(M).arrived, c.c("D0", M + 1) == 0)
    return [Obligation("zero work: initiation", base, _zero_inv(c, z3.IntVal(0))),
            Obligation("zero work: consecution", step, _zero_inv(c, i + 1), i == 0),
            Obligation("zero work: D = 0 means r has ended", end, _zero_goal(c))]


def bound(ranking: Falls = falls, policy: Policy | None = None) -> list[Obligation]:
    """The part's obligations: the sequence first, then zero work, then the join (`liveness_join`)."""
    policy = Policy() if policy is None else policy
    return [*sequence(ranking, policy=policy), *zero_work(policy), *join(policy)]
