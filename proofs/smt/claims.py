"""What each Z3 theorem claims about one step, stated from the rules' text, in terms of the state
before the step (`before`), the plan, what it emitted, and the state after it. Each is named by the
rule it proves; `inductive.PARTS` holds the state facts they carry to the next step."""

from __future__ import annotations

from collections.abc import Callable

import z3

from .policy import SymStep

Claim = Callable[[SymStep], z3.BoolRef]
NAMED = "claim:"  # the prefix of every constant a claim names


class Names:
    """Fresh constants for the running totals a claim walks through (budget left, rank): the claim
    becomes `definitions -> body`, which says the same and lets the solver reason step by step."""

    def __init__(self, claim: str) -> None:
        self.claim = claim
        self.defs: list[z3.BoolRef] = []

    def int(self, term: z3.ArithRef) -> z3.ArithRef:
        const = z3.Int(f"{NAMED}{self.claim}.{len(self.defs)}")
        self.defs.append(const == term)
        return const

    def bool(self, term: z3.BoolRef) -> z3.BoolRef:
        const = z3.Bool(f"{NAMED}{self.claim}.{len(self.defs)}")
        self.defs.append(const == term)
        return const

    def claim_that(self, body: z3.BoolRef) -> z3.BoolRef:
        return z3.Implies(z3.And(self.defs), body)


def budget(t: SymStep) -> z3.BoolRef:
    """BUDGET: the plan's tokens, a decode counting 1, sum to at most B."""
    return t.num_tokens <= t.before.config.token_budget


def one_entry(t: SymStep) -> z3.BoolRef:
    """ONE-ENTRY: each request gets at most one entry (a decode, a chunk or an admission, never
    two), and every entry has n >= 1."""
    facts = []
    for e in t.plan:
        kinds = [z3.If(e.decode, 1, 0), z3.If(e.chunk > 0, 1, 0), z3.If(e.admit, 1, 0)]
        facts += [z3.Sum(kinds) <= 1, z3.Implies(e.planned, e.n >= 1)]
    return z3.And(facts)


def slots(t: SymStep) -> z3.BoolRef:
    """SLOTS: running requests plus those admitted this step fit the S slots."""
    admitted = z3.Sum([z3.If(e.admit, 1, 0) for e in t.plan])
    return t.before.count("running") + admitted <= t.before.config.max_seqs


def kv(t: SymStep) -> z3.BoolRef:
    """KV: the admissions' reservations fit the free KV; a reservation comes back exactly on the step
    its request emits its last token (free after = free - admitted + finished)."""
    admitted = z3.Sum([z3.If(e.admit, r.reservation, 0) for e, r in zip(t.plan, t.before.requests, strict=True)])
    finished = z3.Sum([
        z3.If(z3.And(emits, a.num_emitted == a.max_new), a.reservation, 0)
        for a, emits in zip(t.after.requests, t.emits, strict=True)
    ])
    return z3.And(t.before.free_kv - admitted >= 0, t.after.free_kv == t.before.free_kv - admitted + finished)


def prefill_once(t: SymStep) -> z3.BoolRef:
    """PREFILL-ONCE: a chunk runs the next positions of a prompt not yet done and never goes past its
    end; a decode comes only after the prompt is done."""
    facts = []
    for e, r in zip(t.plan, t.before.requests, strict=True):
        facts += [
            z3.Implies(e.prefill > 0, z3.And(z3.Not(r.ready), r.num_prefilled + e.prefill <= r.prompt_len)),
            z3.Implies(e.decode, r.num_prefilled == r.prompt_len),
        ]
    return z3.And(facts)


def first_token(t: SymStep) -> z3.BoolRef:
    """FIRST-TOKEN: the step whose chunk completes a prompt emits that request's first token; a chunk
    that does not complete it emits nothing."""
    facts = []
    for e, r, emits in zip(t.plan, t.before.requests, t.emits, strict=True):
        completes = r.num_prefilled + e.prefill == r.prompt_len
        facts.append(z3.Implies(e.prefill > 0, emits == completes))
    return z3.And(facts)


def tokens(t: SymStep) -> z3.BoolRef:
    """TOKENS: a decode is one token and emits one; a request emits at most one token a step, only
    when planned, and never more than max_new in all."""
    facts = []
    for e, b, a, emits in zip(t.plan, t.before.requests, t.after.requests, t.emits, strict=True):
        delta = a.num_emitted - b.num_emitted
        facts += [
            z3.Implies(e.decode, z3.And(e.n == 1, emits)),
            delta >= 0, delta <= 1, z3.Implies(emits, e.planned), a.num_emitted <= a.max_new,
        ]
    return z3.And(facts)


def fcfs(t: SymStep) -> z3.BoolRef:
    """FCFS: a request is admitted only if every request that arrived before it and still waits is
    admitted in the same step."""
    rs, plan = t.before.requests, t.plan
    return z3.And([
        z3.Implies(plan[j].admit, z3.Or(z3.Not(rs[i].waiting), plan[i].admit))
        for j in range(len(rs)) for i in range(j)
    ])


def decode_first(t: SymStep) -> z3.BoolRef:
    """DECODE-FIRST: the oldest ready requests, up to B of them, each get a decode; no prefill token
    runs while a ready request goes without."""
    names = Names("decode_first")
    facts = []
    rank: z3.ArithRef = z3.IntVal(0)  # ready requests older than this one
    all_decoded = z3.And([z3.Implies(r.ready, e.decode) for e, r in zip(t.plan, t.before.requests, strict=True)])
    any_prefill = z3.Or([e.prefill > 0 for e in t.plan])
    for e, r in zip(t.plan, t.before.requests, strict=True):
        facts.append(z3.Implies(z3.And(r.ready, rank < t.before.config.token_budget), e.decode))
        rank = names.int(rank + z3.If(r.ready, 1, 0))
    return names.claim_that(z3.And(*facts, z3.Implies(any_prefill, all_decoded)))


def partial_next(t: SymStep) -> z3.BoolRef:
    """PARTIAL-NEXT: with the budget left after decodes, each partial prompt, oldest first, gets
    min(remaining prompt, budget left), before any admission."""
    names = Names("partial_next")
    left = names.int(t.before.config.token_budget - z3.Sum([z3.If(e.decode, 1, 0) for e in t.plan]))
    facts = []
    for e, r in zip(t.plan, t.before.requests, strict=True):
        remaining = r.prompt_len - r.num_prefilled
        owed = names.int(z3.If(left <= 0, 0, z3.If(remaining <= left, remaining, left)))
        facts.append(z3.Implies(r.partial, e.chunk == owed))
        left = names.int(left - z3.If(r.partial, owed, 0))
    return names.claim_that(z3.And(facts))


def work_conserving(t: SymStep) -> z3.BoolRef:
    """WORK-CONSERVING: budget goes unused only when every ready request is decoded, every prompt
    given a chunk gets all of it, and the oldest request still waiting has no free slot or not enough KV."""
    s = t.before
    names = Names("work_conserving")
    unused = s.config.token_budget - t.num_tokens > 0
    num_running = s.count("running") + z3.Sum([z3.If(e.admit, 1, 0) for e in t.plan])
    free_kv = t.free_after_admission
    served = []
    blocked = []
    earlier_waits: z3.BoolRef = z3.BoolVal(False)  # a request before this one still waits
    for e, r in zip(t.plan, s.requests, strict=True):
        served += [
            z3.Implies(r.ready, e.decode), z3.Implies(r.partial, e.chunk > 0),
            z3.Implies(e.prefill > 0, r.num_prefilled + e.prefill == r.prompt_len),
        ]
        still_waits = z3.And(r.waiting, z3.Not(e.admit))
        is_head = z3.And(still_waits, z3.Not(earlier_waits))
        blocked.append(z3.Implies(is_head, z3.Or(num_running >= s.config.max_seqs, r.reservation > free_kv)))
        earlier_waits = names.bool(z3.Or(earlier_waits, still_waits))
    return names.claim_that(z3.Implies(unused, z3.And(served + blocked)))


def progress(t: SymStep) -> z3.BoolRef:
    """PROGRESS: the plan is empty only when nothing waits or runs; every step with work pending
    lowers the remaining work (prompt positions plus tokens to emit), which is never negative: so
    all work is done within as many steps as there are units of work."""
    s = t.before
    busy = z3.Not(s.idle)
    return z3.And(
        z3.Implies(busy, z3.Or([e.planned for e in t.plan])),
        z3.Implies(busy, t.after.work < s.work),
        t.after.work >= 0,
    )
