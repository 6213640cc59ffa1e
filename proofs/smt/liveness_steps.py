"""LIVENESS-STEPS: the per-request bound in steps. A request r that arrives when it and the requests
ahead of it hold P prompt positions to run and D tokens to emit finishes within floor(P / B) + D steps,
under any arrivals (weak fairness of Step: the executor keeps stepping).

The ranking function is R_r = P_r + B * D_r over r and every request that arrived before it. The step
theorem proves, from any state the invariant allows, after any adds, for every waiting or running r:
neither P_r nor D_r grows, and either D_r falls by one (a request of the group emits) or P_r falls by B
(the whole budget went to the group's prompts). So R_r falls by at least B each step; R_r >= 0; r is
unfinished only while R_r > 0, hence it finishes within floor(P / B) + D steps of its arrival.
Arrivals after r sit at later indexes and add nothing to R_r. The theorem is linear (no B * D term is
formed): it states the disjunction, from which the fall of R_r follows by arithmetic.

This is tighter than LIVENESS (W + w units of work) by a factor B on the prompts, so a scheduler that
wastes budget on r's group, or idles a step in three, breaks it (`starvation` checks the same bound on
lassos); `OneTokenPrefill`, which LIVENESS's ranking accepts, is refuted here.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from .claims import Names
from .policy import Draft, Policy, SymStep, smin
from .symbolic import SymRequest, SymState
from .theorems import Theorem


def prompt_left(r: SymRequest) -> z3.ArithRef:
    """P's share of request r: the prompt positions it has still to run (0 if it has not arrived)."""
    return z3.If(r.arrived, r.prompt_len - r.num_prefilled, 0)


def emit_left(r: SymRequest) -> z3.ArithRef:
    """D's share of request r: the tokens it has still to emit (0 if it has not arrived)."""
    return z3.If(r.arrived, r.max_new - r.num_emitted, 0)


Falls = Callable[[z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.ArithRef], z3.BoolRef]  # P0, P1, D0, D1, B


def falls(p0: z3.ArithRef, p1: z3.ArithRef, d0: z3.ArithRef, d1: z3.ArithRef, budget: z3.ArithRef) -> z3.BoolRef:
    """The ranking's step, from P, D before to P, D after: neither grows, and D falls by 1 or P by B
    (linear: the fall of P + B * D by B follows, `liveness_bound`)."""
    return z3.And(p1 <= p0, d1 <= d0, z3.Or(d1 <= d0 - 1, p1 <= p0 - budget))


def liveness_steps(t: SymStep) -> z3.BoolRef:
    """For every waiting or running r: the group's P and D never grow, and D falls by 1 or P by B."""
    names = Names("liveness_steps")
    budget = t.before.config.token_budget
    facts = []
    p0 = p1 = d0 = d1 = z3.IntVal(0)
    for b, a in zip(t.before.requests, t.after.requests, strict=True):
        p0, p1 = names.int(p0 + prompt_left(b)), names.int(p1 + prompt_left(a))
        d0, d1 = names.int(d0 + emit_left(b)), names.int(d1 + emit_left(a))
        facts.append(z3.Implies(z3.Or(b.waiting, b.running), falls(p0, p1, d0, d1, budget)))
    return names.claim_that(z3.And(facts))


LIVENESS_STEPS = Theorem("LIVENESS-STEPS", liveness_steps, ("PARTIAL-YOUNGEST",), "LifoAdmission")


def bound(prompt_ahead: int, emit_ahead: int, token_budget: int) -> int:
    """The steps within which a request finishes: its group's prompt positions over B, plus its tokens."""
    return prompt_ahead // token_budget + emit_ahead


class OneTokenPrefill(Policy):
    """Runs at most one prefill token a step, however much budget the decodes leave: every step still
    does work (LIVENESS's W + w holds), but a long prompt takes a step a token instead of B tokens."""

    breaks = "WORK-CONSERVING"

    def plan_partials(self, s: SymState, d: Draft) -> None:
        d.left = d.let("left", smin(d.left, z3.IntVal(1)))
        super().plan_partials(s, d)
