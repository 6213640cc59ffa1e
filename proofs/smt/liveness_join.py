"""The behaviour `LIVENESS (induction, any N)` is about, as Z3 terms that its parts share: the state at
every step, so that the sequence, zero work, the ranking and the adds speak of one quantity each.

The state at the start of step t, after that step's adds, is the behaviour's at index t: each field of
request j is `beh_<field>[t][j]` (an array over the steps of arrays over the index), the plan of step t
`beh_<array>[t]`, and each of the ranking's prefix sums (`liveness_loops.COUNTS`) a function of t and
the prefix. `chain(t)` is the ranking's `Chain` read at step t: the sequence's P(t), D(t) and U(t) are
`chain(t)`'s P0 and D0 over r's group and `liveness_induction.unfinished` of request m there, the same
terms zero work and the ranking's rule (`group_falls`) are stated over; the state the step leaves is
`chain(t).after`, whose prefix sums are P1 and D1 (the ranking's "after").

What ties step t + 1 to step t, proved here for any t and any N (the join's obligations):

- **the adds on three requests are their pairs'**: the policy's `arrive` on a 3-request state allows
  nothing that its two adjacent pairs' `arrive` does not, and makes each request as they make it (the
  reading below, checked at N = 3);
- **the adds leave the config and the free KV, and keep the ranking's premise** (`liveness_adds`, on
  one, two and three requests): the arrived requests as they were, none admitted, each request's
  per-request parts and each pair's FCFS and PARTIAL-YOUNGEST premise, of the policy's own `arrive`;
- **the adds keep arrivals in index order** (for any two adjacent requests, the policy's `arrive`);
- **r's group has arrived** at step t, by induction down from r: r waiting or running has arrived, and
  where arrivals at step t are in index order, a request below an arrived one has arrived;
- **r stays arrived** over the adds, with r at either place of a pair: the first of (m, m + 1) where
  m + 1 < N, the second of (m - 1, m) where m >= 1, alone where N = 1 (so D = 0 at the end is zero
  work's "finished", not a request taken back);
- **the adds keep r's group** (by induction over the group, each request read as `adds` reads r): P
  and D of r's group at step t + 1, after its adds, are P1 and D1 of what step t left, r's group's
  prefix sums of `chain(t).after`.

The requests at step t + 1 are what the policy's own `arrive` makes of `chain(t).after`, read one
adjacent pair at a time (`adds`): request j is what each pair it belongs to makes of it. That reading
is the policy's `arrive` itself at N <= 2 (one pair, or one request alone), is checked against it at
N = 3 (the first obligation), and is assumed beyond 3: a policy whose adds differ from their pairs
only on four requests or more is judged by its pairs (the row's detail says so: partial). That no add
places a request ahead of r is thus proved of the pairwise reading, through the index order it keeps,
not of every `arrive` on four requests or more.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import z3

from .chain import Chain
from .induction import BOOL, INT, Obligation, Requests, valid_request
from .liveness_adds import NAME, fresh_of, kept_by_adds, named
from .liveness_induction import adjacent_pair, unfinished
from .liveness_loops import COUNTS, recurrences, zero
from .policy import Policy
from .symbolic import SymConfig, SymRequest

FIELDS = (("prompt", INT), ("max_new", INT), ("prefilled", INT), ("emitted", INT), ("arrived", BOOL),
          ("admitted", BOOL))  # `Requests`'s arrays, in its order
PLAN = (("DEC", BOOL), ("CH", INT), ("ADM", BOOL), ("FC", INT))  # `Chain.plan`'s arrays
STEP, M, K = z3.Int("t"), z3.Int("m"), z3.Int("k")  # a step; r's index; a distance below r


class _AtStep:
    """A prefix sum of the behaviour read at one step: called with a prefix, as `Chain.c` calls a count."""

    def __init__(self, f: z3.FuncDeclRef, t: z3.ArithRef) -> None:
        self.f, self.t = f, t

    def __call__(self, at: z3.ArithRef) -> z3.ArithRef:
        return self.f(self.t, at)


@dataclass(frozen=True)
class Behaviour:
    """The symbols every step shares: the policy, the config, N, r's index, the arrays over the steps."""

    policy: Policy
    config: SymConfig
    n: z3.ArithRef
    fields: tuple[z3.ArrayRef, ...]
    plan: dict[str, z3.ArrayRef]
    counts: dict[str, z3.FuncDeclRef]

    @classmethod
    def fresh(cls, policy: Policy) -> Behaviour:
        fields = tuple(z3.Array(f"beh_{name}", INT, z3.ArraySort(INT, sort)) for name, sort in FIELDS)
        plan = {name: z3.Array(f"beh_{name}", INT, z3.ArraySort(INT, sort)) for name, sort in PLAN}
        counts = {name: z3.Function(f"beh_{name}", INT, INT, INT) for name in COUNTS}
        return cls(policy, SymConfig.fresh(), z3.Int("N"), fields, plan, counts)

    def chain(self, t: z3.ArithRef) -> Chain:
        """The ranking's chain at step t: the requests, plan and prefix sums of that step."""
        reqs = Requests(*(f[t] for f in self.fields))
        plan = {k: a[t] for k, a in self.plan.items()}
        count = {k: _AtStep(f, t) for k, f in self.counts.items()}
        return Chain(self.policy, self.config, reqs, self.n, z3.Int("i"), plan, count)  # type: ignore[arg-type]

    def arrived(self, t: z3.ArithRef, j: z3.ArithRef) -> z3.BoolRef:
        return self.chain(t).reqs.arrived[j]

    def group(self, t: z3.ArithRef) -> tuple[z3.ArithRef, z3.ArithRef, z3.BoolRef]:
        """The sequence's P(t), D(t) and U(t): r's group's P0 and D0 at step t, r waiting or running."""
        c = self.chain(t)
        return c.c("P0", M + 1), c.c("D0", M + 1), unfinished(c, M)


def _same(y: SymRequest, made: SymRequest) -> list[z3.BoolRef]:
    """y is `made` but for its arrival flag (which `liveness_adds.named` names as y's already)."""
    return [y.admitted == made.admitted, y.prompt_len == made.prompt_len, y.max_new == made.max_new,
            y.num_prefilled == made.num_prefilled, y.num_emitted == made.num_emitted]


def at_place(b: Behaviour, t: z3.ArithRef, j: z3.ArithRef, place: int) -> z3.BoolRef:
    """Request j at step t + 1 as the adds make it from one pair of what step t left, j at `place` in it:
    0, the first of (j, j + 1); 1, the second of (j - 1, j)."""
    c, nxt, first = b.chain(t), b.chain(t + 1), j - place if place else j
    after, facts = named(b.policy, b.config, (c.after(first), c.after(first + 1)),
                         (b.arrived(t + 1, first), b.arrived(t + 1, first + 1)), f"place{place}")
    return z3.And(facts, *_same(nxt.reqs.at(j), after.requests[place]))


def alone(b: Behaviour, t: z3.ArithRef, j: z3.ArithRef) -> z3.BoolRef:
    """Request j at step t + 1 as the adds make it when it is the only request (N = 1)."""
    after, facts = named(b.policy, b.config, (b.chain(t).after(j),), (b.arrived(t + 1, j),), "alone")
    return z3.And(facts, *_same(b.chain(t + 1).reqs.at(j), after.requests[0]))


def adds(b: Behaviour, t: z3.ArithRef, j: z3.ArithRef) -> z3.BoolRef:
    """Request j (0 <= j < N) at step t + 1 is what the adds make of it after step t: what each adjacent
    pair it is in makes of it (the first of (j, j + 1) where j + 1 < N, the second of (j - 1, j) where
    j >= 1), or, with no pair (N = 1), what the adds make of it alone."""
    return z3.And(z3.Implies(j + 1 < b.n, at_place(b, t, j, 0)), z3.Implies(j >= 1, at_place(b, t, j, 1)),
                  z3.Implies(b.n == 1, alone(b, t, j)))


def pairwise(policy: Policy, config: SymConfig) -> Obligation:
    """The reading `adds` makes, checked on three requests: the policy's `arrive` on them allows nothing
    that its pairs' (0, 1) and (1, 2) do not, and makes each request as each pair it is in makes it, for
    some choice of the symbols each pair's own call draws (`liveness_adds.fresh_of`), from requests that
    meet the ranking's premise (as every state the adds start from does: INIT, the chains, `liveness_adds`)."""
    xs = tuple(SymRequest.fresh(f"{NAME}.y{i}") for i in range(3))
    flags, kv = tuple(z3.Bool(f"{NAME}.b{i}") for i in range(3)), z3.Int(f"{NAME}.kv")
    three, facts = named(policy, config, xs, flags, "three", kv)
    goal: list[z3.BoolRef] = []
    for first in (0, 1):
        call = f"pair{first}"
        pair, pair_facts = named(policy, config, xs[first:first + 2], flags[first:first + 2], call, kv)
        made = z3.And(pair_facts, *_same(three.requests[first], pair.requests[0]),
                      *_same(three.requests[first + 1], pair.requests[1]))
        drawn = fresh_of(call, [made])
        goal.append(z3.Exists(drawn, made) if drawn else made)
    met = [*(valid_request(x, config) for x in xs), *(adjacent_pair(a, b) for a, b in itertools.pairwise(xs))]
    return Obligation(f"{NAME}: the adds on three requests are their pairs'", z3.And(config.valid(), *met, facts),
                      z3.And(goal))


def in_order(b: Behaviour, t: z3.ArithRef, j: z3.ArithRef) -> z3.BoolRef:
    """Arrivals in index order at step t, for the pair j, j + 1."""
    return z3.Implies(b.arrived(t, j + 1), b.arrived(t, j))


def ahead(b: Behaviour, t: z3.ArithRef, k: z3.ArithRef) -> z3.BoolRef:
    """The request k places below r (at index m - k) has arrived at step t."""
    return z3.Implies(z3.And(k >= 0, k <= M), b.arrived(t, M - k))


def kept(b: Behaviour, t: z3.ArithRef, j: z3.ArithRef) -> z3.BoolRef:
    """Over r's group, up to prefix j: P and D at step t + 1 are P1 and D1 of step t."""
    c, nxt = b.chain(t), b.chain(t + 1)
    return z3.Implies(z3.And(j >= 0, j <= M + 1),
                      z3.And(nxt.c("P0", j) == c.c("P1", j), nxt.c("D0", j) == c.c("D1", j)))


def stays(b: Behaviour, t: z3.ArithRef) -> z3.BoolRef:
    """r arrived at step t is arrived at step t + 1."""
    return z3.Implies(b.arrived(t, M), b.arrived(t + 1, M))


def join(policy: Policy) -> list[Obligation]:
    """The join's obligations, for any step t and any N: the pairwise reading at N = 3, what the adds
    leave and keep (`liveness_adds`, on 1 to 3 requests), the adds' index order, r's group arrived (by
    induction down from r), r stays arrived, the adds keep r's group (by induction over it)."""
    b = Behaviour.fresh(policy)
    t, c, nxt = STEP, b.chain(STEP), b.chain(STEP + 1)
    j, valid = c.i, b.config.valid()
    pair = (SymRequest.fresh(f"{NAME}.x0"), SymRequest.fresh(f"{NAME}.x1"))
    flags = (z3.Bool(f"{NAME}.a0"), z3.Bool(f"{NAME}.a1"))
    _, facts = named(policy, b.config, pair, flags, "order")
    r_in = z3.And(valid, M >= 0, b.n > M)
    within = z3.And(r_in, t >= 0)
    walk = z3.And(within, j >= 0, j <= M, kept(b, t, j), ahead(b, t, M - j), adds(b, t, j),
                  recurrences(c, ("P1", "D1"), j), recurrences(nxt, ("P0", "D0"), j))
    return [
        pairwise(policy, b.config), *kept_by_adds(policy, b.config),
        Obligation(f"{NAME}: the adds keep arrivals in index order", z3.And(valid, facts),
                   z3.Implies(flags[1], flags[0])),
        Obligation(f"{NAME}: r's group arrived: initiation",
                   z3.And(within, unfinished(c, M), c.reqs.valid_at(M, b.config)), ahead(b, t, z3.IntVal(0))),
        Obligation(f"{NAME}: r's group arrived: consecution",
                   z3.And(within, K >= 0, ahead(b, t, K), in_order(b, t, M - K - 1)), ahead(b, t, K + 1),
                   z3.And(K == 0, M == 1)),
        Obligation(f"{NAME}: r stays arrived over the adds", z3.And(within, adds(b, t, M)), stays(b, t)),
        Obligation(f"{NAME}: the adds keep r's group: initiation", z3.And(within, zero(c), zero(nxt)),
                   kept(b, t, z3.IntVal(0))),
        Obligation(f"{NAME}: the adds keep r's group: consecution", walk, kept(b, t, j + 1), z3.And(j == 0, M == 0)),
    ]
