"""CrossHair contracts on the reference's stops and cancels: `complete(plan, stopped)` and
`cancel(rid)`. As in `contracts`, leading asserts are preconditions and every later assert, in the
`keeps_*` body, is a postcondition named by its rule; the bodies take the scheduler class, so that
`planted_lifecycle` runs the same postconditions on copies with a bug planted.

- `complete_stops_on_its_token`: two requests, the first stopping on its `stop_at`-th token.
  TOKENS: a stop of a rid that emits nothing in the step (never added, or waiting) is refused and
  changes nothing; the stopped request leaves the running set on its step, is never planned again,
  and emitted exactly `stop_at` tokens; the other emits exactly max_new. KV: the stopped request's
  reservation is back on the step it stops; all K is free at the end. PROGRESS: within the work.
- `cancel_takes_effect`: three requests; request `victim` is cancelled before step `when`, or
  while that step's plan is pending. CANCEL: a cancel of a waiting or running request is accepted,
  of an ended one refused changing nothing, and a repeated one refused changing nothing; once it
  took effect the request is never planned and emits nothing. FCFS: a cancelled waiting request
  leaves the line, the others keeping their order. KV: a running request's reservation is back at
  once (or when the pending plan completes). TOKENS: the others emit exactly max_new.
"""

from __future__ import annotations

from collections.abc import Callable

from stallfree.reference import Scheduler

from .contracts import LIMIT, MAX_BUDGET, MAX_NEW, MAX_SLOTS

REFUSED = (ValueError, TypeError, RuntimeError)  # InvalidField, FieldTypeError, ProtocolError
NEVER_ADDED = 7  # a rid no contract adds
MAX_WHEN = 3  # the latest step before which a cancel is offered

Factory = Callable[[int, int, int], Scheduler]


def complete_stops_on_its_token(token_budget: int, p0: int, m0: int, stop_at: int, p1: int, m1: int) -> None:
    """TOKENS, KV, PROGRESS for a request that stops on its stop_at-th token beside one that does not."""
    assert 1 <= token_budget <= MAX_BUDGET
    assert 1 <= p0 <= LIMIT and 1 <= m0 <= MAX_NEW and 1 <= stop_at <= m0
    assert 1 <= p1 <= LIMIT and 1 <= m1 <= MAX_NEW
    keeps_stops(Scheduler, token_budget, ((p0, m0), (p1, m1)), stop_at)


def cancel_takes_effect(token_budget: int, max_seqs: int, kv_tokens: int, p0: int, m0: int, p1: int, m1: int,
                        p2: int, m2: int, victim: int, when: int, pending: int) -> None:
    """CANCEL, FCFS, KV, TOKENS for a cancel of request `victim` before step `when` (or, with
    `pending`, while that step's plan is pending), whatever the request is doing then."""
    assert 1 <= token_budget <= MAX_BUDGET and 1 <= max_seqs <= MAX_SLOTS and 1 <= kv_tokens <= LIMIT
    assert 1 <= p0 <= LIMIT and 1 <= p1 <= LIMIT and 1 <= p2 <= LIMIT
    assert 1 <= m0 <= MAX_NEW and 1 <= m1 <= MAX_NEW and 1 <= m2 <= MAX_NEW
    assert p0 + m0 <= kv_tokens and p1 + m1 <= kv_tokens and p2 + m2 <= kv_tokens
    assert 0 <= victim <= 2 and 0 <= when <= MAX_WHEN and 0 <= pending <= 1
    keeps_cancel(Scheduler, (token_budget, max_seqs, kv_tokens), ((p0, m0), (p1, m1), (p2, m2)), victim, when,
                 pending == 1)


def _state(s: Scheduler) -> tuple[object, ...]:
    return s.waiting, s.running, s.free_kv


def _reserved(s: Scheduler) -> int:
    return sum(r.prompt_len + r.max_new for r in s.running)


def _refused(call: Callable[[], object]) -> bool:
    try:
        call()
    except REFUSED:
        return True
    return False


def keeps_stops(factory: Factory, token_budget: int, sizes: tuple[tuple[int, int], ...], stop_at: int) -> None:
    kv_tokens = sum(p + m for p, m in sizes)
    scheduler = factory(token_budget, len(sizes), kv_tokens)
    for rid, (p, m) in enumerate(sizes):
        scheduler.add(rid, p, m)
    prefilled, emitted = [0] * len(sizes), [0] * len(sizes)
    stopped = False
    for _ in range(kv_tokens + 1):
        if scheduler.is_idle:
            break
        plan = scheduler.schedule()
        given = {rid: n for rid, n in plan}
        assert not (stopped and 0 in given), "TOKENS: a stopped request is planned"
        before = _state(scheduler)
        bad = [NEVER_ADDED, *(r.rid for r in scheduler.waiting)]
        for rid in bad:  # none of these emits in this step
            assert _refused(lambda rid=rid, plan=plan: scheduler.complete(plan, [rid])), \
                f"TOKENS: a stop of rid {rid}, which emits nothing, was accepted"
            assert _state(scheduler) == before, "TOKENS: a refused stop changed the state"
        p0 = sizes[0][0]
        emits0 = 0 in given and (prefilled[0] == p0 or prefilled[0] + given[0] == p0)
        stop_now = emits0 and not stopped and emitted[0] + 1 == stop_at
        out = scheduler.complete(plan, [0] if stop_now else [])
        for rid, n in given.items():
            if prefilled[rid] < sizes[rid][0]:
                prefilled[rid] += n
        for rid in out:
            emitted[rid] += 1
        if stop_now:
            stopped = True
            assert 0 not in {r.rid for r in scheduler.running}, "TOKENS: a stopped request still runs"
            assert scheduler.free_kv == kv_tokens - _reserved(scheduler), \
                "KV: a stopped request's reservation is not back on the step it stops"
        assert all(e <= m for e, (_, m) in zip(emitted, sizes, strict=True)), "TOKENS: more than max_new"
    assert scheduler.is_idle, "PROGRESS: work left after more steps than units of work"
    assert emitted[0] == stop_at, "TOKENS: a request that stopped emitted more or fewer tokens than it stopped on"
    assert emitted[1:] == [m for _, m in sizes[1:]], "TOKENS: a request that did not stop emitted other than max_new"
    assert scheduler.free_kv == kv_tokens, "KV: all of it is free at the end"


def keeps_cancel(factory: Factory, config: tuple[int, int, int], sizes: tuple[tuple[int, int], ...], victim: int,
                 when: int, pending: bool) -> None:
    kv_tokens = config[2]
    scheduler = factory(*config)
    for rid, (p, m) in enumerate(sizes):
        scheduler.add(rid, p, m)
    emitted = [0] * len(sizes)
    gone = False  # the cancel took effect: nothing may be planned or emitted for the victim
    for step in range(sum(p + m for p, m in sizes) + 1):
        if scheduler.is_idle:
            break
        if step == when and not pending:
            gone = _cancel(scheduler, victim, kv_tokens, pending=False)
        plan = scheduler.schedule()
        assert not (gone and victim in {rid for rid, _ in plan}), "CANCEL: planned after its cancel took effect"
        cancelled_now = step == when and pending and _cancel(scheduler, victim, kv_tokens, pending=True)
        out = scheduler.complete(plan)
        assert not (gone and victim in out), "CANCEL: emitted after its cancel took effect"
        for rid in out:
            emitted[rid] += 1
        if cancelled_now:
            gone = True
            assert victim not in {r.rid for r in scheduler.running}, "CANCEL: still running after its plan completed"
            assert scheduler.free_kv == kv_tokens - _reserved(scheduler), \
                "KV: a cancelled request's reservation is not back when its plan completes"
    assert scheduler.is_idle, "PROGRESS: work left after more steps than units of work"
    others = [(e, m) for rid, (e, (_, m)) in enumerate(zip(emitted, sizes, strict=True)) if rid != victim]
    assert all(e == m for e, m in others), "TOKENS: a request that was not cancelled emitted other than max_new"
    assert scheduler.free_kv == kv_tokens, "KV: all of it is free at the end"


def _cancel(scheduler: Scheduler, victim: int, kv_tokens: int, pending: bool) -> bool:
    """Cancel `victim` and judge the call; True if it took effect now (a waiting request, or a
    running one with no plan pending), False if refused (ended) or pending."""
    waiting = [r.rid for r in scheduler.waiting]
    running = [r.rid for r in scheduler.running]
    before = _state(scheduler)
    if victim not in waiting and victim not in running:  # it ended
        assert _refused(lambda: scheduler.cancel(victim)), "CANCEL: a cancel of an ended request was accepted"
        assert _state(scheduler) == before, "CANCEL: a refused cancel changed the state"
        return False
    assert not _refused(lambda: scheduler.cancel(victim)), "CANCEL: a cancel of a waiting or running request raised"
    after = _state(scheduler)
    assert _refused(lambda: scheduler.cancel(victim)), "CANCEL: a repeated cancel was accepted"
    assert _state(scheduler) == after, "CANCEL: a refused repeated cancel changed the state"
    if victim in waiting:
        assert [r.rid for r in scheduler.waiting] == [rid for rid in waiting if rid != victim], \
            "FCFS: a cancelled waiting request did not leave the line, the others in order"
        assert scheduler.free_kv == before[2], "KV: a waiting request's cancel moved the free KV"
        return True
    if pending:
        return False
    assert victim not in {r.rid for r in scheduler.running}, "CANCEL: a cancelled running request still runs"
    assert scheduler.free_kv == kv_tokens - _reserved(scheduler), "KV: a cancelled request's reservation is not back"
    return True
