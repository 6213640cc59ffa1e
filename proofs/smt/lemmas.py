"""Stepping stones for the whole-step theorems: facts about each request that the solver proves first,
one at a time under the same hypothesis, and may then assume. Each is small (one request, or one sum
bounded by another), so it proves in well under a second; given them, the global claim is linear
arithmetic over named terms. Without them, KV and READY-WITHIN-BUDGET time out past ~8 requests."""

from __future__ import annotations

from collections.abc import Callable

import z3

from .policy import SymStep

Lemmas = Callable[[SymStep], list[z3.BoolRef]]


def held(running: z3.BoolRef, reservation: z3.ArithRef) -> z3.ArithRef:
    return z3.If(running, reservation, 0)


def kv_per_slot(t: SymStep) -> list[z3.BoolRef]:
    """Each request's reservation is held after the step iff it was held before or admitted now, and it
    has not just emitted its last token; and free KV moves by exactly those reservations."""
    facts = []
    for e, b, a, emits in zip(t.plan, t.before.requests, t.after.requests, t.emits, strict=True):
        finishes = z3.And(emits, a.num_emitted >= a.max_new)
        facts.append(held(a.running, a.reservation)
                     == held(b.running, b.reservation) + z3.If(e.admit, b.reservation, 0)
                     - z3.If(z3.And(finishes, z3.Or(b.running, e.admit)), b.reservation, 0))
        facts.append(z3.Implies(finishes, z3.Or(b.running, e.admit)))
    return facts


def planned_per_slot(t: SymStep) -> list[z3.BoolRef]:
    """A request ready after the step was planned in it, and every planned request got n >= 1; so
    there are no more ready requests than entries, nor entries than tokens."""
    facts = []
    for e, a in zip(t.plan, t.after.requests, strict=True):
        facts += [z3.Implies(a.ready, e.planned), z3.Implies(e.planned, e.n >= 1)]
    facts.append(t.num_tokens <= t.before.config.token_budget)
    facts.append(t.after.count("ready") <= z3.Sum([z3.If(e.planned, 1, 0) for e in t.plan]))
    return facts


def decodes_then_partials(t: SymStep) -> list[z3.BoolRef]:
    """The decode phase spends exactly one token per decode, and leaves the rest to the partial
    prompts: the budget the partial phase starts from is B less the decodes."""
    decodes = z3.Sum([z3.If(e.decode, 1, 0) for e in t.plan])
    left = t.left_after.get("plan_decodes")
    return [] if left is None else [left == t.before.config.token_budget - decodes, left >= 0]
