"""CrossHair contracts on the reference's add / schedule / complete, checked by `crosshair check
--analysis_kind=asserts` (see `crosshair_run`). Each contract's leading asserts are its
preconditions; every assert after them, in the `keeps_*` body it calls, is a postcondition named by
the rule it checks. CrossHair runs the real reference on symbolic ints and searches for inputs that
break a postcondition.

The bodies take the scheduler class as an argument so that `planted` can run the very same
postconditions on copies with a bug planted, one per rule: CrossHair cannot confirm a contract (it
stops at its time limit having found nothing), so each check is shown failing there.
"""

from __future__ import annotations

from collections.abc import Callable

from stallfree.reference import Phase, Scheduler
from stallfree.spec import InvalidField

LIMIT = 64  # sizes stay small: CrossHair's search is over paths, and small ints keep them few
MAX_BUDGET = 16
MAX_SLOTS = 3
MAX_NEW = 8
STEPS = 2  # steps of schedule_keeps_the_limits
ADD_BUDGET, ADD_SLOTS = 4, 2  # any: add() does not depend on them

Factory = Callable[[int, int, int], Scheduler]


def add_accepts_exactly_what_fits(kv_tokens: int, prompt_len: int, max_new: int) -> None:
    """NEVER-FIT: add() refuses a request exactly when prompt_len + max_new exceeds K, and a refusal
    changes nothing."""
    assert 1 <= kv_tokens <= LIMIT
    assert 1 <= prompt_len <= LIMIT and 1 <= max_new <= LIMIT
    keeps_never_fit(Scheduler, kv_tokens, prompt_len, max_new)


def schedule_keeps_the_limits(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                              p1: int, m1: int, p2: int, m2: int) -> None:
    """BUDGET, ONE-ENTRY, SLOTS, KV, FCFS on two steps of three requests of any sizes: the plan fits
    the budget, names each request once with n >= 1, running requests fit the slots, free KV is the
    capacity less the running reservations, and admission follows arrival order."""
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    keeps_the_limits(Scheduler, (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)))


def schedule_follows_the_policy(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int,
                                p1: int, m1: int, p2: int, m2: int) -> None:
    """DECODE-FIRST, PARTIAL-NEXT, WORK-CONSERVING on two steps of three requests of any sizes: ready
    requests are decoded before any prefill, partial prompts then get min(remaining, budget left)
    oldest first, and budget goes unused only when nothing more could be planned."""
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    keeps_the_policy(Scheduler, (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)))


def complete_emits_on_time(token_budget: int, prompt_len: int, max_new: int) -> None:
    """PREFILL-ONCE, FIRST-TOKEN, TOKENS, KV, PROGRESS for one request of any size: it emits its first
    token on the step its prompt completes, one token a step after that, max_new in all, and returns
    all KV when it finishes, within prompt_len + max_new steps."""
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= prompt_len <= LIMIT and 1 <= max_new <= MAX_NEW
    keeps_time(Scheduler, token_budget, prompt_len, max_new)


def keeps_never_fit(factory: Factory, kv_tokens: int, prompt_len: int, max_new: int) -> None:
    scheduler = factory(ADD_BUDGET, ADD_SLOTS, kv_tokens)
    try:
        scheduler.add(0, prompt_len, max_new)
    except InvalidField:
        assert prompt_len + max_new > kv_tokens, "NEVER-FIT: refused a request that fits"
        assert scheduler.is_idle and scheduler.free_kv == kv_tokens, "NEVER-FIT: a refusal changed state"
        return
    assert prompt_len + max_new <= kv_tokens, "NEVER-FIT: accepted a request that can never fit"
    assert [r.rid for r in scheduler.waiting] == [0], "NEVER-FIT: an accepted request is not queued"


def keeps_the_limits(factory: Factory, config: tuple[int, int, int], sizes: tuple[tuple[int, int], ...]) -> None:
    token_budget, max_seqs, kv_tokens = config
    scheduler = factory(token_budget, max_seqs, kv_tokens)
    for rid, (p, m) in enumerate(sizes):
        scheduler.add(rid, p, m)
    for _ in range(STEPS):
        plan = scheduler.schedule()
        rids = [rid for rid, _ in plan]
        assert sum(n for _, n in plan) <= token_budget, "BUDGET"
        assert len(set(rids)) == len(rids) and all(n >= 1 for _, n in plan), "ONE-ENTRY"
        assert len(scheduler.running) <= max_seqs, "SLOTS"
        reserved = sum(r.prompt_len + r.max_new for r in scheduler.running)
        assert scheduler.free_kv == kv_tokens - reserved and scheduler.free_kv >= 0, "KV"
        admitted = [r.rid for r in scheduler.running]
        waiting = [r.rid for r in scheduler.waiting]
        # rids are arrival order: every admitted request came before every one still waiting
        assert admitted == sorted(admitted) and max(admitted, default=-1) < min(waiting, default=len(sizes)), "FCFS"
        scheduler.complete(plan)


def keeps_the_policy(factory: Factory, config: tuple[int, int, int], sizes: tuple[tuple[int, int], ...]) -> None:
    token_budget, max_seqs, _ = config
    scheduler = factory(*config)
    for rid, (p, m) in enumerate(sizes):
        scheduler.add(rid, p, m)
    for _ in range(STEPS):
        progress = {r.rid: scheduler.progress(r.rid) for r in scheduler.running}
        ready = [rid for rid, p in progress.items() if p.phase is Phase.READY]  # admission order
        partial = [rid for rid, p in progress.items() if p.phase is Phase.PARTIAL]
        waiting = scheduler.waiting
        plan = scheduler.schedule()
        given = {rid: n for rid, n in plan}
        decoded = [rid for rid in ready if rid in given]
        prefill = [rid for rid, _ in plan if rid not in ready]
        assert set(ready[:token_budget]) <= set(decoded) and all(given[r] == 1 for r in decoded), "DECODE-FIRST"
        assert not prefill or len(decoded) == len(ready), "DECODE-FIRST: prefill while a ready request goes without"
        left = token_budget - len(decoded)
        for rid in partial:  # oldest first
            owed = min(progress[rid].prompt_len - progress[rid].num_prefilled, left) if left > 0 else 0
            assert given.get(rid, 0) == owed, "PARTIAL-NEXT"
            left -= owed
        if sum(given.values()) < token_budget:
            remaining = {r: progress[r].prompt_len - progress[r].num_prefilled for r in partial}
            completes = all(given[r] == remaining[r] for r in partial if r in given)
            admitted = [r for r in waiting if r.rid in given]
            assert len(decoded) == len(ready) and completes, "WORK-CONSERVING: budget left unused"
            assert all(given[r.rid] == r.prompt_len for r in admitted), "WORK-CONSERVING: budget left unused"
            head = next((r for r in waiting if r.rid not in given), None)
            assert head is None or len(scheduler.running) >= max_seqs or head.prompt_len + head.max_new > \
                scheduler.free_kv, "WORK-CONSERVING: the head fits, yet budget is left unused"
        scheduler.complete(plan)


def keeps_time(factory: Factory, token_budget: int, prompt_len: int, max_new: int) -> None:
    kv_tokens = prompt_len + max_new
    scheduler = factory(token_budget, 1, kv_tokens)
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
