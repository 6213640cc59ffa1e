"""Tests written to kill mutants of reference/ that the contract's other tests let survive
(docs/mutation.md lists each one): the progress view, phase by phase, and the derived properties
that make two branches of `schedule()` unreachable, shown on random workloads."""

from __future__ import annotations

import random

import pytest

from stallfree.reference import Phase, Progress, Scheduler
from stallfree.spec import Monitor, StepFacts, play
from stallfree.spec.errors import ProtocolError
from stallfree.testing.generate import random_workload

NUM_WORKLOADS = 60


def step(s: Scheduler) -> tuple[int, ...]:
    return s.complete(s.schedule())


def test_progress_reports_every_phase_with_exact_counts() -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=100)
    s.add(7, 6, 3)
    assert s.progress(7) == Progress(7, Phase.WAITING, 6, 3, 0, 0)
    step(s)  # chunk 0-4
    assert s.progress(7) == Progress(7, Phase.PARTIAL, 6, 3, 4, 0)
    step(s)  # chunk 4-6 completes the prompt: first token
    assert s.progress(7) == Progress(7, Phase.READY, 6, 3, 6, 1)
    step(s)
    assert s.progress(7) == Progress(7, Phase.READY, 6, 3, 6, 2)
    step(s)
    assert s.progress(7) == Progress(7, Phase.FINISHED, 6, 3, 6, 3)  # ended in the last step
    step(s)  # one step later no record of it is kept: memory is bounded by what waits and runs
    with pytest.raises(KeyError, match="rid 7 is not waiting or running, and did not end in the last step"):
        s.progress(7)


def test_progress_counts_nothing_emitted_while_waiting_behind_a_running_request() -> None:
    s = Scheduler(token_budget=2, max_seqs=1, kv_tokens=100)
    s.add(0, 1, 5)
    s.add(1, 3, 2)
    for _ in range(3):
        step(s)
        assert s.progress(1) == Progress(1, Phase.WAITING, 3, 2, 0, 0)


def test_ONE_PARTIAL_and_ready_plus_partial_within_budget() -> None:
    """At most one request is partial, and the ready ones plus a partial one never exceed B: so the
    partial loop of schedule() never meets an exhausted budget (its `break` is unreachable) and
    the READY-WITHIN-BUDGET assertion never fires (docs/mutation.md, equivalent mutants)."""
    seen_partial_beside_ready = 0

    def check(monitor: Monitor, facts: StepFacts) -> None:
        nonlocal seen_partial_beside_ready
        shadow = monitor.shadow
        num_partial = len(shadow.running) - shadow.num_ready
        assert num_partial <= 1, f"ONE-PARTIAL: {num_partial} partial requests after step {facts.step}"
        assert shadow.num_ready + num_partial <= shadow.config.token_budget
        seen_partial_beside_ready += num_partial and shadow.num_ready > 0

    for i in range(NUM_WORKLOADS):
        play(random_workload(random.Random(f"partial:{i}")), Scheduler, on_step=check)
    assert seen_partial_beside_ready > 0, "the workloads never had a partial request beside ready ones"


def test_cancel_refusals_say_what_was_wrong_with_the_rid() -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=100)
    s.add(0, 2, 3)
    with pytest.raises(TypeError) as raised:
        s.cancel("0")  # type: ignore[arg-type]
    assert str(raised.value) == "cancel('0'): rid must be an int, got str"
    with pytest.raises(ValueError) as raised:
        s.cancel(5)
    assert str(raised.value) == "cancel(5): it is not waiting or running (never added, or ended)"
    s.schedule()
    s.cancel(0)  # admitted by the pending plan: it ends when that plan completes
    with pytest.raises(ValueError) as raised:
        s.cancel(0)
    assert str(raised.value) == "cancel(0): it is already cancelled and ends when the plan for step 0 completes"


def test_progress_of_an_older_ended_rid_says_no_record_is_kept() -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=100)
    with pytest.raises(KeyError) as raised:
        s.progress(3)
    assert raised.value.args[0] == ("rid 3 is not waiting or running, and did not end in the last step "
                                    "(never accepted, or ended earlier: no record of it is kept)")


def test_a_running_request_cancelled_between_steps_reads_cancelled() -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=100)
    s.add(0, 2, 3)
    step(s)
    s.cancel(0)
    assert s.progress(0) == Progress(0, Phase.CANCELLED, 2, 3, 2, 1) and s.free_kv == 100


@pytest.mark.parametrize(("stopped", "shown"), [("01", "str '01'"), (5, "int 5"), (b"0", "bytes b'0'")])
def test_stopped_that_is_not_an_iterable_of_rids_is_refused_by_name(stopped: object, shown: str) -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=100)
    s.add(0, 2, 3)
    plan = s.schedule()
    with pytest.raises(TypeError) as raised:
        s.complete(plan, stopped)  # type: ignore[arg-type]
    assert str(raised.value) == f"stopped must be an iterable of rids, got {shown}"
    assert s.complete(plan) == (0,)  # nothing changed: the plan is still pending


def test_each_bad_stop_is_refused_with_its_reason_and_nothing_changes() -> None:
    s = Scheduler(token_budget=4, max_seqs=3, kv_tokens=100)
    for rid, prompt_len in ((0, 2), (1, 2), (2, 10)):
        s.add(rid, prompt_len, 3)
    step(s)  # rids 0 and 1 ready
    s.add(3, 1, 1)  # waits: the slots are full once rid 2 is admitted
    plan = s.schedule()  # decodes 0 and 1, rid 2's first chunk of 2
    refused = {
        ("x",): "stopped[0] must be an int rid, got str 'x'",
        (0, 0): "stopped[1]: rid 0 is listed twice",
        (0, 2): "stopped[1]: rid 2 emits no token in step 1; it is partial: its chunk in this step leaves 8 "
                "prompt tokens to run",
        (3,): "stopped[0]: rid 3 emits no token in step 1; it is waiting",
        (9,): "stopped[0]: rid 9 emits no token in step 1; it is not waiting or running (never added, or ended)",
    }
    for stopped, message in refused.items():
        with pytest.raises((TypeError, ValueError, ProtocolError)) as raised:
            s.complete(plan, stopped)
        assert str(raised.value) == message
    assert s.complete(plan, (1,)) == (0, 1) and s.progress(1).phase is Phase.STOPPED


def test_a_rid_added_again_after_it_ended_is_no_longer_listed_as_ended() -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=100)
    s.add(0, 2, 1)
    step(s)
    assert s.ended == (0,)
    s.add(0, 3, 1)
    assert s.ended == () and s.progress(0) == Progress(0, Phase.WAITING, 3, 1, 0, 0)


def test_a_cancel_while_pending_reads_cancelled_once_the_plan_completes() -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=100)
    s.add(0, 2, 5)
    step(s)
    plan = s.schedule()
    s.cancel(0)
    assert s.complete(plan) == (0,)
    assert s.progress(0).phase is Phase.CANCELLED and s.free_kv == 100


def test_a_stop_on_a_prompt_completed_now_does_not_end_the_checks_of_the_rids_after_it() -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=100)
    s.add(0, 3, 5)
    plan = s.schedule()  # rid 0's whole prompt: its first token comes out of this step
    with pytest.raises(ProtocolError) as raised:
        s.complete(plan, (0, 9))
    assert str(raised.value) == ("stopped[1]: rid 9 emits no token in step 0; it is not waiting or running "
                                 "(never added, or ended)")
    assert s.complete(plan, (0,)) == (0,) and s.progress(0).phase is Phase.STOPPED
