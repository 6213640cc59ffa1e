"""INIT (any N): the state a new scheduler starts from meets the premise of LIVENESS-STEPS's ranking,
for any number of requests (the third link of `LIVENESS (induction, any N)`, which the INIT row proves
only at N = 12).

The requests are arrays over their index (`liveness_loops.ranking_chain`), each as the policy's
`initial_at` says of its index (not arrived, not admitted, no progress), each one add() accepts (the
only requests that ever enter), and the free KV the policy's `initial_free_kv`. Obligations:

- **per request**: each request has the per-request parts (`Requests.valid_at`);
- **adjacent pair**: FCFS's admitted prefix and PARTIAL-YOUNGEST at each pair j, j + 1;
- **KV**: by induction over the requests, no request runs before the first step, so the reserved KV
  (the ranking's `rkv` prefix sum) is 0 at every prefix; at its end, the free KV is K less it (KV's
  free = K - reserved), which is what the ranking's entry reads (`entered_from_state`).

A policy that starts a phantom request only past index 11 (`liveness_planted.BusyPastTwelve`) passes
INIT at N = 12 and fails here at the pair 11, 12 (admitted after one not admitted) and at the KV consecution.
"""

from __future__ import annotations

import z3

from .chain import FREE_BEFORE
from .induction import Obligation
from .liveness_induction import adjacent
from .liveness_loops import ranking_chain, recurrences, zero
from .policy import Policy

NAME = "INIT (any N)"


def init_any_n(policy: Policy) -> list[Obligation]:
    """The four obligations: per request, adjacent pair, KV initiation and consecution, KV exit."""
    c = ranking_chain(policy)
    i, j = c.i, z3.Int("j")

    def started(at: z3.ArithRef) -> z3.BoolRef:  # request `at` as the new scheduler holds it
        r = c.reqs.at(at)
        return z3.And(at >= 0, policy.initial_at(r, at), policy.accepts(r, c.config))

    def reserved(at: z3.ArithRef) -> z3.BoolRef:  # the KV loop's invariant at prefix `at`
        return z3.And(at >= 0, at <= c.n, c.c("rkv", at) == 0)

    valid = c.config.valid()
    base = z3.And(valid, c.n >= 0, zero(c), policy.initial_free_kv(c.config) == FREE_BEFORE)
    step = z3.And(base, reserved(i), i < c.n, started(i), recurrences(c, ("rkv",), i))
    return [Obligation(f"{NAME}: per request", z3.And(valid, started(j)), c.reqs.valid_at(j, c.config)),
            Obligation(f"{NAME}: adjacent pair", z3.And(valid, started(j), started(j + 1)), adjacent(c, j)),
            Obligation(f"{NAME}: KV initiation", base, reserved(z3.IntVal(0))),
            Obligation(f"{NAME}: KV consecution", step, reserved(i + 1), i == 0),
            Obligation(f"{NAME}: KV exit, free = K - reserved", z3.And(base, reserved(c.n)),
                       c.config.kv_tokens - c.c("rkv", c.n) == FREE_BEFORE)]
