"""The inductive invariant of the reference, in named parts. Every Z3 theorem assumes the whole
invariant before a step and proves its own part after it; together they prove the invariant
inductive (theorem INVARIANT); `Policy.initial` is the state it starts from (theorem INIT)."""

from __future__ import annotations

from collections.abc import Callable

import z3

from .symbolic import SymState

Part = Callable[[SymState], z3.BoolRef]


def types(s: SymState) -> z3.BoolRef:
    """TYPES (what PREFILL-ONCE and TOKENS carry from step to step): lengths are >= 1;
    0 <= num_prefilled <= prompt_len; 0 <= num_emitted <= max_new; a request not admitted has made no
    progress; only an arrived request is admitted."""
    facts = []
    for r in s.requests:
        facts += [
            r.prompt_len >= 1, r.max_new >= 1,
            r.num_prefilled >= 0, r.num_prefilled <= r.prompt_len,
            r.num_emitted >= 0, r.num_emitted <= r.max_new,
            z3.Implies(z3.Not(r.admitted), z3.And(r.num_prefilled == 0, r.num_emitted == 0)),
            z3.Implies(r.admitted, r.arrived),
        ]
    return z3.And(facts)


def first_token(s: SymState) -> z3.BoolRef:
    """FIRST-TOKEN: an admitted request has emitted a token exactly when its prompt is done."""
    return z3.And([
        z3.Implies(r.admitted, (r.num_prefilled == r.prompt_len) == (r.num_emitted >= 1)) for r in s.requests
    ])


def never_fit(s: SymState) -> z3.BoolRef:
    """NEVER-FIT: every accepted request fits the KV capacity."""
    return z3.And([z3.Implies(r.arrived, r.reservation <= s.config.kv_tokens) for r in s.requests])


def fcfs(s: SymState) -> z3.BoolRef:
    """FCFS: the arrived requests are a prefix of the request indexes, and the admitted a prefix of those."""
    rs = s.requests
    return z3.And(
        [z3.And(z3.Implies(rs[i + 1].arrived, rs[i].arrived), z3.Implies(rs[i + 1].admitted, rs[i].admitted))
         for i in range(len(rs) - 1)]
    )


def kv(s: SymState) -> z3.BoolRef:
    """KV: free + reserved == capacity, and free >= 0: reservations never exceed K."""
    return z3.And(s.free_kv + s.reserved == s.config.kv_tokens, s.free_kv >= 0)


def slots(s: SymState) -> z3.BoolRef:
    """SLOTS: running requests never exceed S."""
    return s.count("running") <= s.config.max_seqs


def ready_within_budget(s: SymState) -> z3.BoolRef:
    """READY-WITHIN-BUDGET: ready requests never outnumber the budget B."""
    return s.count("ready") <= s.config.token_budget


def one_partial(s: SymState) -> z3.BoolRef:
    """ONE-PARTIAL: at most one running request is partway through its prompt."""
    return s.count("partial") <= 1


PARTS: dict[str, Part] = {
    "TYPES": types,
    "FIRST-TOKEN": first_token,
    "NEVER-FIT": never_fit,
    "FCFS": fcfs,
    "KV": kv,
    "SLOTS": slots,
    "READY-WITHIN-BUDGET": ready_within_budget,
    "ONE-PARTIAL": one_partial,
}


def invariant(s: SymState) -> z3.BoolRef:
    return z3.And([part(s) for part in PARTS.values()])
