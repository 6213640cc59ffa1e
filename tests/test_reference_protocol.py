"""The reference refuses protocol misuse (clear error, no state change): complete() of a foreign or
stale plan, complete() twice, schedule() twice."""

from __future__ import annotations

import pytest

from stallfree.reference import Scheduler
from stallfree.spec import Entry, Plan, ProtocolError


def started() -> Scheduler:
    s = Scheduler(token_budget=8, max_seqs=4, kv_tokens=64)
    s.add(0, 10, 3)
    s.add(1, 4, 2)
    return s


def state(s: Scheduler) -> tuple[object, ...]:
    return (s.waiting, s.running, s.free_kv, s.num_steps, s.progress(0), s.progress(1))


def test_schedule_twice_without_complete_is_refused() -> None:
    s = started()
    plan = s.schedule()
    before = state(s)
    with pytest.raises(ProtocolError, match="step 0 is still pending"):
        s.schedule()
    assert state(s) == before
    assert s.complete(plan) == ()  # the pending plan is still the one to complete


def test_complete_without_schedule_is_refused() -> None:
    s = started()
    before = state(s)
    with pytest.raises(ProtocolError, match="call schedule\\(\\) first"):
        s.complete(Plan(0, (Entry(0, 8),)))
    assert state(s) == before


def test_complete_of_a_foreign_plan_is_refused() -> None:
    s = started()
    s.schedule()
    before = state(s)
    with pytest.raises(ProtocolError, match="not the pending one"):
        s.complete(Plan(0, (Entry(0, 3),)))
    assert state(s) == before


def test_complete_twice_is_refused() -> None:
    s = started()
    plan = s.schedule()
    s.complete(plan)
    before = state(s)
    with pytest.raises(ProtocolError, match="without a pending plan"):
        s.complete(plan)
    assert state(s) == before


def test_an_equal_copy_of_the_pending_plan_is_accepted() -> None:
    s = started()
    plan = s.schedule()
    assert s.complete(Plan(plan.step, tuple(plan.entries))) == ()


def test_plan_entries_unpack_as_rid_n() -> None:
    s = started()
    plan = s.schedule()
    assert [(rid, n) for rid, n in plan] == [(0, 8)]
    assert plan.num_tokens == 8 and len(plan) == 1 and plan[0].rid == 0
