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

from collections.abc import Callable, Iterable, Sequence

from stallfree.reference import Phase, Scheduler
from stallfree.spec import InvalidField, Request

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
    scheduler = factory(*config)
    for rid, (p, m) in enumerate(sizes):
        scheduler.add(rid, p, m)
    for _ in range(STEPS):
        plan = scheduler.schedule()
        # rids are arrival order here
        kept = limits(config, plan, scheduler.running, scheduler.waiting, scheduler.free_kv, lambda rid: rid)
        for rule, ok in kept.items():
            assert ok, rule
        scheduler.complete(plan)


def limits(config: tuple[int, int, int], plan: Iterable[tuple[int, int]], running: Sequence[Request],
           waiting: Sequence[Request], free_kv: int, arrival: Callable[[int], int]) -> dict[str, bool]:
    """BUDGET, ONE-ENTRY, SLOTS, KV, FCFS, as the schedule contract states them, each true where kept:
    of `plan`, the running and waiting requests and the free KV right after schedule(); `arrival`
    gives a rid's place in arrival order."""
    token_budget, max_seqs, kv_tokens = config
    entries = list(plan)
    rids = [rid for rid, _ in entries]
    reserved = sum(r.prompt_len + r.max_new for r in running)
    admitted = [arrival(r.rid) for r in running]
    queued = [arrival(r.rid) for r in waiting]
    return {
        "BUDGET": sum(n for _, n in entries) <= token_budget,
        "ONE-ENTRY": len(set(rids)) == len(rids) and all(n >= 1 for _, n in entries),
        "SLOTS": len(running) <= max_seqs,
        "KV": free_kv == kv_tokens - reserved and free_kv >= 0,
        # every admitted request came before every one still waiting (those admitted in one step
        # are admitted together: the spec reads no order among them)
        "FCFS": max(admitted, default=-1) < min(queued, default=1 << 62),
    }


def keeps_the_policy(factory: Factory, config: tuple[int, int, int], sizes: tuple[tuple[int, int], ...]) -> None:
    scheduler = factory(*config)
    for rid, (p, m) in enumerate(sizes):
        scheduler.add(rid, p, m)
    for _ in range(STEPS):
        progress = {r.rid: scheduler.progress(r.rid) for r in scheduler.running}
        ready = [rid for rid, p in progress.items() if p.phase is Phase.READY]  # admission order
        remaining = {rid: p.prompt_len - p.num_prefilled for rid, p in progress.items() if p.phase is Phase.PARTIAL}
        waiting = scheduler.waiting
        plan = scheduler.schedule()
        kept = policy(config, ready, remaining, waiting, plan, len(scheduler.running), scheduler.free_kv)
        for rule, ok in kept.items():
            assert ok, rule
        scheduler.complete(plan)


def policy(config: tuple[int, int, int], ready: Sequence[int], remaining: dict[int, int], waiting: Sequence[Request],
           plan: Iterable[tuple[int, int]], num_running: int, free_kv: int) -> dict[str, bool]:
    """DECODE-FIRST, PARTIAL-NEXT, WORK-CONSERVING, as the policy contract states them, each true
    where kept: of the ready requests (admission order), the partial ones' remaining prompts (oldest
    first), the waiting requests before the step, its plan, and the running count and free KV right
    after schedule()."""
    token_budget, max_seqs, _ = config
    given: dict[int, int] = {}
    for rid, n in plan:
        given[rid] = n
    decoded = [rid for rid in ready if rid in given]
    prefill = [rid for rid in given if rid not in ready]
    oldest = [rid for i, rid in enumerate(ready) if i < token_budget]  # ready[:B], written so a symbolic B runs
    decode_first = (set(oldest) <= set(decoded) and all(given[r] == 1 for r in decoded)
                    and (not prefill or len(decoded) == len(ready)))
    left = token_budget - len(decoded)
    partial_next = True
    for rid, rest in remaining.items():  # oldest first
        owed = min(rest, left) if left > 0 else 0
        partial_next = partial_next and given.get(rid, 0) == owed
        left -= owed
    work_conserving = True
    if sum(given.values()) < token_budget:
        completes = all(given.get(r, 0) == rest for r, rest in remaining.items())  # every partial served in full
        admitted = [r for r in waiting if r.rid in given]
        head = next((r for r in waiting if r.rid not in given), None)
        work_conserving = (len(decoded) == len(ready) and completes
                           and all(given[r.rid] == r.prompt_len for r in admitted)
                           and (head is None or num_running >= max_seqs or head.prompt_len + head.max_new > free_kv))
    return {"DECODE-FIRST": decode_first, "PARTIAL-NEXT": partial_next, "WORK-CONSERVING": work_conserving}


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
