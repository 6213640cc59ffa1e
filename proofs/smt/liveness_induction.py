"""LIVENESS-STEPS for any N, by loop induction: the ranking in steps (`liveness_steps`) over arrays of
any length. Request r is any index m < N that is waiting or running; its group is the prefix 0..m,
and P, D (prompt positions and tokens left, before and after the step) are prefix sums, each defined
by its recurrence. The claim, as at N = 12: neither P nor D of r's group grows, and D falls by one
or P by B.

The phases run as loops in the policy's order (`liveness_loops`). A fourth loop, the ranking loop,
runs over the requests once the phases are done, reading each request's entry and the tokens the
policy's completion has it emit; its invariant, at every prefix, says: P and D after are P and D
before less what the prefix was given and emitted; and while the prefix has emitted nothing, a
ready request in it means the decodes were entered with no budget, a partial one that the partials
left none, a waiting one (with admission entered with budget, a free slot, all of K free, nothing
stopped or admitted) that its first chunks took all the budget admission was entered with. With r
waiting or partial nothing after r is admitted (FCFS, PARTIAL-YOUNGEST, one adjacent pair at a
time), so the loop also carries that no decode, chunk or running request is added past r. The rule
is one last obligation at the end of r's group, from the loops' exits; it is in no invariant.

The premise, of the state the step starts from (after the adds): each request's per-request parts
(`Requests.valid_at`, which PER-REQUEST proves kept for any N over the step; a request the policy's
own add() takes has them: an obligation here, on the policy's `arrive`; `liveness_adds` proves that
the adds keep every part of the premise, in the row), FCFS's admitted prefix and PARTIAL-YOUNGEST for adjacent requests
(the FCFS and PARTIAL-YOUNGEST chains, any N), and KV's free = K - reserved (the KV chain, any N).
FOLD (N = 3, `fold`) says which policy the loops are about; a policy that fails it is judged by the
claim on its own step at N = 3 (`refute_at_three`): a counterexample at one N refutes "for any N",
while holding there proves nothing, so the row stays unknown.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import z3

from .chain import FREE_BEFORE, Chain
from .fold import folds
from .induction import LoopInduction, Obligation, valid_request
from .liveness_loops import COUNTS, LOOPS, R0, State, phases, ranking_chain, recurrences, zero
from .liveness_steps import LIVENESS_STEPS, Falls, falls
from .policy import Policy
from .symbolic import SymRequest, SymState
from .theorems import obligation

REFUTE_AT = 3  # the N of the fixed-N refutation of a policy that is not the fold



# -- the ranking loop and the rule ------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """Request r (index m) and what the ranking loop reads of the phases: the budget the decodes were
    entered with, what the partials left, what admission was entered with."""

    m: z3.ArithRef
    decodes: z3.ArithRef
    partials_left: z3.ArithRef
    admission: State

    @classmethod
    def of(cls, states: dict[str, tuple[State, State]]) -> Group:
        return cls(z3.Int("m"), states["plan_decodes"][0][0], states["plan_partials"][1][0], states["admit"][0])


def _open(c: Chain, g: Group) -> z3.BoolRef:
    """r waiting or partway through its prompt: nothing after it is admitted (FCFS, PARTIAL-YOUNGEST)."""
    r = c.reqs.at(g.m)
    return z3.Or(r.waiting, r.partial)


def _silent(c: Chain, at: z3.ArithRef, g: Group) -> z3.BoolRef:
    """While the prefix has emitted nothing: a ready request in it means the decodes had no budget; a
    partial one, that the partials left none; a waiting one, with admission entered with budget, a
    slot and all of K, that its first chunks took the whole budget admission was entered with."""
    k, e = c.config, g.admission
    fits = z3.And(e[0] >= 1, e[1] < k.max_seqs, e[2] >= k.kv_tokens, z3.Not(e[3]), e[4] == 0)
    return z3.Implies(c.c("tok", at) == 0, z3.And(
        z3.Implies(c.c("rdy", at) >= 1, g.decodes <= 0), z3.Implies(c.c("par", at) >= 1, g.partials_left == 0),
        z3.Implies(z3.And(c.c("wai", at) >= 1, fits), c.c("sa", at) >= e[0])))


def _tail(c: Chain, at: z3.ArithRef, g: Group) -> z3.BoolRef:
    """Past an open r: nothing is admitted, so no decode, chunk or running request is added."""
    end = g.m + 1
    same = z3.And([c.c(k, at) == c.c(k, end) for k in ("dec", "sp", "run", "rkv", "rdy")])
    return z3.And(z3.Implies(z3.And(_open(c, g), at >= end), same),
                  z3.Implies(z3.And(_open(c, g), at > end), z3.Not(c.reqs.at(at - 1).admitted)))


def _ranking(c: Chain, at: z3.ArithRef, g: Group) -> z3.BoolRef:
    """The ranking loop's invariant at prefix `at`."""
    n = {k: c.c(k, at) for k in COUNTS}
    return z3.And(
        at >= 0, at <= c.n, *(n[k] >= 0 for k in ("tok", "dec", "rdy", "par", "wai", "run", "sp", "sa", "adm", "ref")),
        n["P1"] == n["P0"] - n["sp"] - n["sa"], n["D1"] == n["D0"] - n["tok"], n["dec"] <= n["tok"],
        n["run"] == n["rdy"] + n["par"], z3.Implies(n["run"] == 0, n["rkv"] == 0),
        z3.Implies(n["par"] == 0, n["sp"] == 0),
        z3.Implies(n["wai"] == 0, z3.And(n["adm"] == 0, n["sa"] == 0, n["akv"] == 0, n["ref"] == 0)),
        _silent(c, at, g), _tail(c, at, g))


def adjacent(c: Chain, j: z3.ArithRef) -> z3.BoolRef:
    """The premise for requests j and j + 1 (0 <= j): FCFS's admitted prefix and PARTIAL-YOUNGEST."""
    return z3.Implies(j >= 0, adjacent_pair(c.reqs.at(j), c.reqs.at(j + 1)))


def adjacent_pair(r: SymRequest, s: SymRequest) -> z3.BoolRef:
    """The premise for a request r and the one after it, s: FCFS's admitted prefix and PARTIAL-YOUNGEST."""
    return z3.And(z3.Implies(s.admitted, r.admitted), z3.Implies(r.partial, z3.Not(s.admitted)))


def _met(c: Chain, states: dict[str, tuple[State, State]], j: z3.ArithRef) -> z3.BoolRef:
    """What each phase's invariant at its exit says of request j."""
    return z3.And([LOOPS[name].each(c, j, e, x) for name, (e, x) in states.items()])


def entered_from_state(c: Chain) -> z3.BoolRef:
    """The step enters its first phase with the state's running count and free KV, which KV's part
    of the premise makes K less the running requests' reservations."""
    return z3.And(c.c("run", c.n) == R0, c.config.kv_tokens - c.c("rkv", c.n) == FREE_BEFORE)


def ranking(policy: Policy) -> list[Obligation]:
    """LIVENESS-STEPS for any N: the phases' loops, the ranking loop, and the rule at r's group's end."""
    c = ranking_chain(policy)
    obligations, states, exits = phases(c)
    g, i = Group.of(states), c.i
    base = z3.And(c.config.valid(), c.n >= 0, zero(c), g.m >= 0, g.m < c.n)
    step = z3.And(base, _ranking(c, i, g), i < c.n, c.reqs.valid_at(i, c.config), _met(c, states, i),
                  adjacent(c, i - 1), recurrences(c, COUNTS, i))
    end = g.m + 1
    before = entered_from_state(c)
    where = z3.And(base, exits, before, _ranking(c, g.m, g), _ranking(c, end, g), _ranking(c, c.n, g),
                   c.reqs.valid_at(g.m, c.config), unfinished(c, g.m), recurrences(c, ("rdy", "par", "wai"), g.m))
    rule = group_falls(c, g.m)
    return [*folds(policy), _added(c), *obligations,
            Obligation("ranking: initiation", base, _ranking(c, z3.IntVal(0), g)),
            Obligation("ranking: consecution", step, _ranking(c, i + 1, g), z3.And(i == 0, g.m == 0)),
            Obligation("ranking: the rule", where, rule)]


def unfinished(c: Chain, m: z3.ArithRef) -> z3.BoolRef:
    """Request m waiting or running: the requests the ranking is about (`liveness_join` reads the
    same term at each step of a behaviour)."""
    r = c.reqs.at(m)
    return z3.Or(r.waiting, r.running)


def group_falls(c: Chain, m: z3.ArithRef, ranking: Falls = falls) -> z3.BoolRef:
    """The rule over request m's group (indexes 0 .. m): `ranking` from P, D before the step to P, D
    after, the chain's own prefix sums at m + 1 (`liveness_join` reads the same terms at each step)."""
    p0, p1, d0, d1 = (c.c(k, m + 1) for k in ("P0", "P1", "D0", "D1"))
    return ranking(p0, p1, d0, d1, c.config.token_budget)


def _added(c: Chain) -> Obligation:
    """The per-request premise holds of a request the policy's own add() takes: a request not yet
    arrived (not admitted, no progress, its lengths at least 1), as the policy's `arrive` leaves it once
    it has arrived (`liveness_adds` proves that the adds keep the rest of the premise)."""
    x = c.reqs.at(c.i)
    before = z3.And(z3.Not(x.arrived), z3.Not(x.admitted), x.num_prefilled == 0, x.num_emitted == 0,
                    x.prompt_len >= 1, x.max_new >= 1)
    after, facts = c.policy.arrive(SymState(c.config, (x,), z3.Int("adds.free_kv")), "adds")
    (made,) = after.requests
    return Obligation("adds: a request add() queues meets the premise",
                      z3.And(c.config.valid(), before, facts, made.arrived), valid_request(made, c.config))


def refute_at_three(policy: Policy) -> Obligation:
    """LIVENESS-STEPS's ranking (not PARTIAL-YOUNGEST after, which the N = 12 theorem also carries)
    on the policy's own step at N = 3, from any state the whole invariant allows after any adds: a
    counterexample refutes the claim for any N (the premise above is part of that invariant)."""
    ranking_only = dataclasses.replace(LIVENESS_STEPS, parts=())  # the row claims no part of the state after
    hypothesis, goal, _step = obligation(ranking_only, policy, REFUTE_AT)
    return Obligation(f"LIVENESS-STEPS at N={REFUTE_AT} (the policy's own step)", hypothesis, goal)


LIVENESS_INDUCTIONS: tuple[LoopInduction, ...] = (
    LoopInduction("LIVENESS-STEPS (induction, phases chained)",
                  "LIVENESS-STEPS (P, D never grow; D falls by 1 or P by B)", ranking, "LifoAdmission",
                  refute=refute_at_three),
)
