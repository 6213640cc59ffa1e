"""The reference's stops and cancels, call by call: `complete(plan, stopped)` and `cancel(rid)` do
what the widened rules say (TOKENS, KV, FCFS, PROGRESS, CANCEL), and every bad call raises naming
the rid and its state, changing nothing. Repeated cancels are errors, not no-ops."""

from __future__ import annotations

import pytest

from stallfree.reference import Phase, Scheduler
from stallfree.spec import Config, Monitor, ProtocolError


def state(s: Scheduler) -> tuple[object, ...]:
    return (s.waiting, s.running, s.free_kv, s.num_steps, s.is_idle, s.ended)


def monitored(budget: int = 8, max_seqs: int = 4, kv: int = 64) -> tuple[Scheduler, Monitor]:
    s = Scheduler(budget, max_seqs, kv)
    return s, Monitor(s, Config(budget, max_seqs, kv))


def test_TOKENS_a_stop_ends_the_request_on_its_token_and_KV_comes_back_on_that_step() -> None:
    s, m = monitored()
    m.add(0, 8, 6)
    m.step()  # whole prompt: first token
    assert s.free_kv == 64 - 14
    facts = m.step(stopped=[0])  # its second token is an end token
    assert facts.emitted == [0] and [t.rid for t in facts.finished] == [0]
    assert s.free_kv == 64 and s.is_idle
    assert s.progress(0).phase is Phase.STOPPED and s.progress(0).num_emitted == 2


def test_TOKENS_a_stop_on_the_first_token_from_the_completing_chunk() -> None:
    s, m = monitored()
    m.add(0, 8, 6)
    m.plan()
    assert m.due() == [0]
    m.complete([0])
    assert s.is_idle and s.progress(0).num_emitted == 1


@pytest.mark.parametrize(("setup", "rid", "message"), [
    ("waiting", 2, r"stopped\[0\]: rid 2 emits no token in step 1; it is waiting"),
    ("partial", 1, r"stopped\[0\]: rid 1 emits no token in step 1; it is partial: its chunk in this step "
                   r"leaves \d+ prompt tokens to run"),
    ("unknown", 9, r"stopped\[0\]: rid 9 emits no token in step 1; it is not waiting or running"),
])
def test_TOKENS_a_stop_for_a_rid_that_emits_nothing_raises_and_changes_nothing(setup: str, rid: int,
                                                                              message: str) -> None:
    s = Scheduler(8, 2, 200)
    s.add(0, 4, 5)
    s.add(1, 40, 5)
    s.complete(s.schedule())  # rid 0 ready; rid 1 partial
    s.add(2, 4, 4)  # waits: two slots taken
    plan = s.schedule()
    before = state(s)
    with pytest.raises(ProtocolError, match=message):
        s.complete(plan, [rid])
    assert state(s) == before
    assert s.complete(plan) == (0,)  # the plan is still pending, and completes


def test_TOKENS_a_stop_listed_twice_or_not_an_int_raises_naming_it() -> None:
    s = Scheduler(8, 2, 200)
    s.add(0, 4, 5)
    plan = s.schedule()
    with pytest.raises(ValueError, match=r"stopped\[1\]: rid 0 is listed twice"):
        s.complete(plan, [0, 0])
    with pytest.raises(TypeError, match=r"stopped\[0\] must be an int rid, got str '0'"):
        s.complete(plan, ["0"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="stopped must be an iterable of rids, got int 0"):
        s.complete(plan, 0)  # type: ignore[arg-type]
    assert s.complete(plan) == (0,)


def test_TOKENS_a_stop_for_a_request_that_already_finished_raises() -> None:
    s = Scheduler(8, 2, 200)
    s.add(0, 4, 1)
    s.complete(s.schedule())  # its only token: finished
    plan = s.schedule()
    with pytest.raises(ProtocolError, match="rid 0 emits no token in step 1; it is not waiting or running"):
        s.complete(plan, [0])


def test_CANCEL_a_waiting_request_leaves_the_line_and_FCFS_moves_the_next_up() -> None:
    s, m = monitored(budget=8, max_seqs=1, kv=64)
    m.add(0, 8, 4)
    m.add(1, 8, 4)
    m.add(2, 8, 4)
    m.step()  # rid 0 admitted; 1 and 2 wait for the slot
    assert m.cancel(1) is True
    assert [r.rid for r in s.waiting] == [2] and s.progress(1).phase is Phase.CANCELLED
    while 2 not in {r.rid for r in s.running}:
        m.step()
    assert s.progress(2).phase is Phase.PARTIAL or s.progress(2).phase is Phase.READY


def test_CANCEL_a_running_request_ends_at_once_and_its_reservation_is_free_for_the_next_schedule() -> None:
    s, m = monitored(budget=32, max_seqs=4, kv=30)
    m.add(0, 8, 6)  # reserves 14
    m.add(1, 10, 6)  # reserves 16: 30 in all
    m.add(2, 4, 4)  # reserves 8: must wait for KV
    m.step()
    assert s.free_kv == 30 - 14 - 16 and [r.rid for r in s.waiting] == [2]
    assert m.cancel(0) is True
    assert s.free_kv == 30 - 16 and s.progress(0).phase is Phase.CANCELLED
    facts = m.step()
    assert [c.track.rid for c in facts.admitted] == [2] and 0 not in facts.planned


def test_CANCEL_while_the_plan_is_pending_ends_the_request_when_complete_runs() -> None:
    s, m = monitored()
    m.add(0, 4, 6)
    m.step()
    m.plan()
    assert m.cancel(0) is True
    assert s.free_kv == 64 - 10 and s.progress(0).phase is Phase.READY  # not yet: the plan runs first
    facts = m.complete()
    assert facts.emitted == [0] and [t.rid for t in facts.finished] == [0]  # its token of that step
    assert s.free_kv == 64 and s.is_idle and s.progress(0).phase is Phase.CANCELLED
    assert s.progress(0).num_emitted == 2


def test_CANCEL_of_a_request_admitted_by_the_pending_plan_ends_with_it() -> None:
    s, m = monitored()
    m.add(0, 20, 3)
    m.plan()  # admits rid 0 with a chunk of 8
    assert m.cancel(0) is True
    facts = m.complete()
    assert facts.emitted == [] and s.is_idle and s.free_kv == 64


@pytest.mark.parametrize("when", ["never added", "finished", "cancelled", "cancelled while pending"])
def test_CANCEL_a_repeated_or_unknown_cancel_raises_naming_the_rid_and_changes_nothing(when: str) -> None:
    s = Scheduler(8, 2, 64)
    s.add(0, 4, 1)
    s.add(1, 4, 6)
    plan = s.schedule()
    if when == "finished":
        s.complete(plan)  # rid 0's only token
        plan = s.schedule()
    elif when == "cancelled":
        s.complete(plan)
        s.cancel(1)
        plan = s.schedule()
    elif when == "cancelled while pending":
        s.cancel(1)
    rid = {"never added": 7, "finished": 0, "cancelled": 1, "cancelled while pending": 1}[when]
    before = state(s)
    pending = when == "cancelled while pending"
    expected = "it is already cancelled and ends when the plan for step 0 completes" if pending \
        else "it is not waiting or running"
    with pytest.raises(ValueError, match=rf"cancel\({rid}\): {expected}"):
        s.cancel(rid)
    assert state(s) == before
    s.complete(plan)  # the plan still completes


@pytest.mark.parametrize("rid", ["1", 1.0, True, None])
def test_CANCEL_a_rid_that_is_not_an_int_raises_naming_it(rid: object) -> None:
    s = Scheduler(8, 2, 64)
    s.add(1, 4, 1)
    with pytest.raises(TypeError, match=r"cancel\(.*\): rid must be an int, got"):
        s.cancel(rid)  # type: ignore[arg-type]
    assert [r.rid for r in s.waiting] == [1]


def test_PROGRESS_every_request_finishes_stops_or_is_cancelled_and_no_record_outlives_a_step() -> None:
    s, m = monitored(budget=16, max_seqs=4, kv=400)
    for rid in range(6):
        m.add(rid, 5, 8)
    m.step()
    m.cancel(5)  # waiting
    m.plan()
    m.cancel(4)  # admitted by the pending plan
    m.complete()
    m.step(stopped=[0])
    while not s.is_idle:
        m.step()
    assert s.free_kv == 400 and not s._waiting and not s._running and not s._finishing  # nothing left behind
    with pytest.raises(KeyError, match="rid 0 is not waiting or running"):
        s.progress(0)


def test_FCFS_a_cancelled_waiting_head_blocks_nothing() -> None:
    s, m = monitored(budget=32, max_seqs=4, kv=40)
    m.add(0, 10, 10)  # reserves 20
    m.add(1, 20, 10)  # reserves 30: does not fit beside rid 0, and blocks rid 2 behind it (FCFS)
    m.add(2, 4, 4)  # reserves 8: would fit, but waits behind rid 1
    facts = m.step()
    assert [c.track.rid for c in facts.admitted] == [0] and [r.rid for r in s.waiting] == [1, 2]
    assert m.cancel(1)
    facts = m.step()  # the monitor's FCFS check: rid 2 is now the head, and is admitted
    assert [c.track.rid for c in facts.admitted] == [2]


def test_old_workloads_without_stops_or_cancels_load_and_dump_as_before() -> None:
    from stallfree.spec import Workload

    text = ('{"config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64}, '
            '"requests": [{"rid": 0, "prompt_len": 8, "max_new": 6, "arrival_step": 0}]}')
    workload = Workload.loads(text)
    assert workload.cancels == () and workload.requests[0].stop_after is None and not workload.has_stops
    assert workload.dumps() == text


@pytest.mark.parametrize(("item", "message"), [
    ('{"rid": 0, "step": -1}', r"workload.cancels\[0\].step must be >= 0, got -1"),
    ('{"rid": 0, "step": 1, "pending": 1}', r"workload.cancels\[0\].pending must be true or false, got 1"),
    ('{"rid": 0}', r"workload.cancels\[0\] must be an object with rid and step"),
    ('{"rid": 0, "step": 1, "when": 2}', r"workload.cancels\[0\] has unknown field\(s\) \['when'\]"),
])
def test_bad_cancel_events_name_the_field(item: str, message: str) -> None:
    from stallfree.spec import InvalidField, Workload

    text = f'{{"config": {{"token_budget": 8, "max_seqs": 4, "kv_tokens": 64}}, "requests": [], "cancels": [{item}]}}'
    with pytest.raises((InvalidField, TypeError), match=message):
        Workload.loads(text)


def test_a_bad_stop_after_names_the_field() -> None:
    from stallfree.spec import Workload

    text = ('{"config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64}, '
            '"requests": [{"rid": 0, "prompt_len": 8, "max_new": 6, "stop_after": 0}]}')
    with pytest.raises(ValueError, match=r"workload.requests\[0\].stop_after must be >= 1, got 0"):
        Workload.loads(text)
