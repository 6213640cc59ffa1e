"""The step view's record: each step's tokens by kind, every request's state, why a waiting one
waits, KV in use, and the plan of a step that broke a rule, read off the protocol as the monitor
reads it."""

from __future__ import annotations

from stallfree.commands.trace import HAND_TRACE
from stallfree.faults import FAULTS
from stallfree.reference import Scheduler
from stallfree.spec import Arrival, Config, Workload
from stallfree.view import ADMISSION, CHUNK, DECODE, record
from stallfree.view.waiting import NO_BUDGET, NO_KV, NO_SLOT, PASSED_OVER


def workload(budget: int, seqs: int, kv: int, *requests: tuple[int, int, int, int]) -> Workload:
    return Workload(Config(budget, seqs, kv), tuple(Arrival(*r) for r in requests))


def test_hand_trace_tokens_by_kind_and_kv() -> None:
    rec = record(HAND_TRACE, Scheduler)
    assert rec.violation is None and len(rec.steps) == 6
    kinds = [(s.tokens(DECODE), s.tokens(CHUNK), s.tokens(ADMISSION)) for s in rec.steps]
    assert kinds == [(0, 0, 8), (1, 0, 7), (1, 7, 0), (1, 6, 0), (2, 0, 0), (2, 0, 0)]
    # r0 reserves 8 + 6 = 14 at step 0, r1 20 + 3 = 23 at step 1; both come back at step 5.
    assert [s.kv_in_use for s in rec.steps] == [14, 37, 37, 37, 37, 37]
    assert [s.kv_after for s in rec.steps] == [14, 37, 37, 37, 37, 0]
    assert [s.arrived for s in rec.steps] == [(0,), (1,), (), (), (), ()]
    states = [[(c.rid, c.state, c.n) for c in s.cells] for s in rec.steps]
    assert states[1] == [(0, "ready", 1), (1, "waiting", 7)]
    assert states[3] == [(0, "ready", 1), (1, "partial", 6)]


def test_a_waiting_request_says_why() -> None:
    no_slot = record(workload(8, 1, 64, (0, 4, 3, 0), (1, 4, 3, 0)), Scheduler)
    assert no_slot.steps[0].waiting == {1: NO_SLOT}
    # KV 25: r0 reserves 15, r1 needs 18 of the 10 left; r2 would fit but waits behind r1 (FCFS).
    no_kv = record(workload(8, 4, 25, (0, 10, 5, 0), (1, 10, 8, 0), (2, 2, 2, 0)), Scheduler)
    assert no_kv.steps[0].waiting == {1: NO_KV, 2: "behind r1"}
    no_budget = record(workload(4, 4, 64, (0, 8, 2, 0), (1, 8, 2, 0)), Scheduler)
    assert no_budget.steps[0].waiting == {1: NO_BUDGET}


def test_a_request_passed_over_is_told_from_one_that_must_wait() -> None:
    # Admitting one request a step leaves budget while the next one fits: WORK-CONSERVING's fault.
    w = workload(8, 4, 64, (0, 2, 2, 0), (1, 2, 2, 0))
    rec = record(w, FAULTS["WORK-CONSERVING"], rules=["BUDGET"])
    assert rec.steps[0].waiting == {1: PASSED_OVER}
    assert record(w, Scheduler).steps[0].waiting == {}


def test_the_plan_that_breaks_a_rule_is_recorded_though_it_never_ran() -> None:
    w = workload(8, 4, 25, (0, 10, 5, 0), (1, 10, 8, 0), (2, 2, 2, 0))
    rec = record(w, FAULTS["FCFS"])
    assert rec.violation is not None and rec.violation.rule == "FCFS" and rec.violation.step == 1
    broken = rec.broken_step
    assert broken is not None and not broken.completed and broken.step == 1
    assert broken.describe() == "r0 chunk 8-10, r2 chunk 0-2 (admitted)"
    assert rec.shown_steps[-1] is broken and len(rec.steps) == 1


def test_a_rule_broken_after_the_step_ran_marks_that_step() -> None:
    rec = record(HAND_TRACE, FAULTS["FIRST-TOKEN"])  # the completing chunk emits nothing
    assert rec.violation is not None and rec.violation.rule == "FIRST-TOKEN"
    broken = rec.broken_step
    assert broken is not None and broken.completed and broken is rec.steps[-1]
    assert broken.step == rec.violation.step and rec.shown_steps == rec.steps


def test_unchecked_rules_let_the_record_follow_a_wrong_scheduler_to_the_end() -> None:
    rec = record(HAND_TRACE, FAULTS["DECODE-FIRST"], rules=["BUDGET"])
    assert rec.violation is None and rec.broken_step is None
    assert rec.steps[-1].kv_after == 0  # every reservation came back
