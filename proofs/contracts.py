"""CrossHair contracts on the reference's add / schedule / complete, checked by `crosshair check
--analysis_kind=asserts` (see `crosshair_run`). Each function's leading asserts are its
preconditions; every assert after them is a postcondition, named by the rule it checks. CrossHair
runs the real reference on symbolic ints and searches for inputs that break a postcondition.

CrossHair cannot confirm a contract: it stops at its time limit having found no counterexample.
`planted` holds a copy with a bug planted where random tests rarely look; CrossHair finds it,
which shows these checks can fail.
"""

from __future__ import annotations

from stallfree.reference import Scheduler
from stallfree.spec import InvalidField

LIMIT = 64  # sizes stay small: CrossHair's search is over paths, and small ints keep them few


def add_accepts_exactly_what_fits(kv_tokens: int, prompt_len: int, max_new: int) -> None:
    """NEVER-FIT: add() refuses a request exactly when prompt_len + max_new exceeds K, and a refusal
    changes nothing."""
    assert 1 <= kv_tokens <= LIMIT
    assert 1 <= prompt_len <= LIMIT and 1 <= max_new <= LIMIT
    scheduler = Scheduler(4, 2, kv_tokens)
    try:
        scheduler.add(0, prompt_len, max_new)
    except InvalidField:
        assert prompt_len + max_new > kv_tokens, "NEVER-FIT: refused a request that fits"
        assert scheduler.is_idle and scheduler.free_kv == kv_tokens, "NEVER-FIT: a refusal changed state"
        return
    assert prompt_len + max_new <= kv_tokens, "NEVER-FIT: accepted a request that can never fit"
    assert [r.rid for r in scheduler.waiting] == [0]


def schedule_keeps_the_limits(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                              p1: int, m1: int, p2: int, m2: int) -> None:
    """BUDGET, ONE-ENTRY, SLOTS, KV, FCFS on two steps of three requests of any sizes: the plan fits
    the budget, names each request once with n >= 1, running requests fit the slots, free KV is the
    capacity less the running reservations, and admission follows arrival order."""
    assert 1 <= token_budget <= 16 and 1 <= max_seqs <= 3 and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= 8 and 1 <= m1 <= 8 and 1 <= m2 <= 8
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    scheduler = Scheduler(token_budget, max_seqs, kv_tokens)
    for rid, (p, m) in enumerate(((p0, m0), (p1, m1), (p2, m2))):
        scheduler.add(rid, p, m)
    for _ in range(2):
        plan = scheduler.schedule()
        rids = [rid for rid, _ in plan]
        assert sum(n for _, n in plan) <= token_budget, "BUDGET"
        assert len(set(rids)) == len(rids) and all(n >= 1 for _, n in plan), "ONE-ENTRY"
        assert len(scheduler.running) <= max_seqs, "SLOTS"
        reserved = sum(r.prompt_len + r.max_new for r in scheduler.running)
        assert scheduler.free_kv == kv_tokens - reserved and scheduler.free_kv >= 0, "KV"
        admitted = [r.rid for r in scheduler.running]
        assert admitted == sorted(admitted), "FCFS"
        scheduler.complete(plan)


def complete_emits_on_time(token_budget: int, prompt_len: int, max_new: int) -> None:
    """FIRST-TOKEN, TOKENS, KV, PROGRESS for one request of any size: it emits its first token on the
    step its prompt completes, one token a step after that, max_new in all, and returns all KV when
    it finishes, within prompt_len + max_new steps."""
    assert 1 <= token_budget <= 16 and 1 <= prompt_len <= LIMIT and 1 <= max_new <= 8
    kv_tokens = prompt_len + max_new
    scheduler = Scheduler(token_budget, 1, kv_tokens)
    scheduler.add(0, prompt_len, max_new)
    prefilled = emitted = steps = 0
    while not scheduler.is_idle:
        assert steps < prompt_len + max_new, "PROGRESS: more steps than units of work"
        plan = scheduler.schedule()
        assert len(plan) == 1, "PROGRESS: a step with work pending planned nothing"
        n = plan[0].n
        out = scheduler.complete(plan)
        if prefilled < prompt_len:
            prefilled += n
            assert prefilled <= prompt_len, "PREFILL-ONCE"
            assert (0 in out) == (prefilled == prompt_len), "FIRST-TOKEN"
        else:
            assert n == 1 and 0 in out, "TOKENS: a decode is one token and emits one"
        emitted += 0 in out
        steps += 1
    assert emitted == max_new, "TOKENS: max_new tokens in all"
    assert scheduler.free_kv == kv_tokens, "KV: all of it is free at the end"
