"""Requests that end early on the real step path, one rank, in process: a request stops when it
samples the stop token and is cancelled when its client goes away; its KV cells come back on that
step and the next admission reuses them; no step reads a returned cell (the KV read check, and the
NaN poison behind it); each check fails on a broken executor or a wrong scheduler; exactness
compares like with like (the reference samples the end token where the run stopped); isolation
replays the first run's stops."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from tiny_runs import model, play

from stallfree.executor.engine.broken import BROKEN_ENDS
from stallfree.executor.engine.job import Job
from stallfree.executor.exactness.equivalence import compare
from stallfree.executor.exactness.isolation import isolation, perturbed
from stallfree.executor.runs.runspec import RunSpec
from stallfree.spec import Arrival, Cancel, Config, InvalidField, Workload

# KV for two requests at once: rid 2 waits for rid 0 or rid 1 to end. Greedy on the tiny model with
# seed 0, rid 1 samples token 1175 as its third token (and no other request samples it).
TIGHT = Workload(Config(8, 4, 64), (Arrival(0, 10, 20, 0), Arrival(1, 6, 20, 0), Arrival(2, 12, 8, 1),
                                     Arrival(3, 5, 6, 2)))
ROOMY = Workload(Config(8, 4, 128), TIGHT.requests)  # returned cells stay free a while (no reuse at once)
STOP = 1175
NO_MONITOR: tuple[str, ...] = ()


def test_stop_on_the_end_token_returns_kv_that_the_next_admission_reuses() -> None:
    """TOKENS, KV: rid 1 stops on its third token (the stop token) and its cells go to rid 2, which
    is admitted the next step instead of waiting for a request to run to max_new."""
    full, stopped = play(Job(TIGHT), Job(TIGHT, stop_token=STOP))
    assert full.ok and stopped.ok, (full.violation, stopped.violation)
    assert full.requests[1].outputs[2] == STOP and len(full.requests[1].outputs) == 20
    r1 = stopped.requests[1]
    assert (r1.finish_reason, len(r1.outputs), r1.outputs[-1]) == ("stop", 3, STOP)
    assert r1.outputs == full.requests[1].outputs[:3]
    r2 = stopped.requests[2]
    assert r2.admitted_at == r1.emitted_at[-1] + 1 < full.requests[2].admitted_at
    assert set(r2.cells) & set(r1.cells)  # the stopped request's cells, reused
    assert [r.finish_reason for _, r in sorted(stopped.requests.items())] == ["length", "stop", "length", "length"]


def test_cancel_mid_run_emits_nothing_after_and_its_cells_are_reused() -> None:
    """CANCEL: rid 0 cancelled before step 6 emits nothing from step 6 on; its cells come back then
    (the monitor and the real path agree on free KV every step) and a later admission takes them.
    (rid 4, waiting for KV, is admitted into them on that step). A cancel of a rid not yet added is
    refused and recorded."""
    workload = Workload(TIGHT.config, (*TIGHT.requests, Arrival(4, 15, 10, 4)))  # 25 cells: waits for KV
    (result,) = play(Job(workload, stop_token=STOP, cancels=(Cancel(0, 6), Cancel(5, 1))))
    assert result.ok, result.violation
    r0, r4 = result.requests[0], result.requests[4]
    assert r0.finish_reason == "cancel" and max(r0.emitted_at) < 6 and len(r0.outputs) == 5
    assert result.cancels == [(5, 1, False), (0, 6, True)]
    assert r4.admitted_at == 6 and set(r4.cells) <= set(r0.cells)


def test_cancel_of_a_waiting_request_admits_it_never() -> None:
    """CANCEL, FCFS: rid 2, waiting for KV, is cancelled; it is never admitted and rid 3 moves up."""
    (result,) = play(Job(TIGHT, cancels=(Cancel(2, 3),)))
    assert result.ok, result.violation
    assert 2 not in result.requests and result.cancelled_silent == [2]
    assert result.requests[3].finish_reason == "length"


def test_a_cancel_while_a_plan_is_pending_is_refused_on_the_real_path() -> None:
    """The executor runs each step whole (the run loop's engine), so a cancel offered while a plan
    is pending cannot happen there: it is refused by name before any step, not dropped."""
    with pytest.raises(InvalidField, match=r"cancel of rid 0 at step 3: pending=true"):
        play(Job(TIGHT, cancels=(Cancel(0, 3, pending=True),)))


@pytest.mark.parametrize("name", sorted(BROKEN_ENDS))
def test_kv_read_check_catches_a_broken_executor(name: str) -> None:
    """Negative controls: an executor that returns an ended request's cells a step late (KV: the
    allocator disagrees with the contract), one whose decodes read a returned cell (KV: the read
    check names the cell and how its holder ended), and one whose attention reads a cell returned
    the step before without the batch naming it (the NaN poison: non-finite rows)."""
    (result,) = play(Job(ROOMY, stop_token=STOP, variant=name))
    assert result.violation is not None
    rule, _, message, where = result.violation
    assert (rule, where) == (BROKEN_ENDS[name].breaks, "real path"), result.violation
    if name == "ReadFreedCell":
        assert "which is free: returned when rid 1 stopped at step 3" in message, message
    if name == "ReadsJustFreed":  # a read the batch does not declare: the NaN poison shows it
        assert "already freed (NaN in their hidden states)" in message, result.violation


def test_read_of_a_cancelled_request_cell_is_caught() -> None:
    (result,) = play(Job(ROOMY, variant="ReadFreedCell", cancels=(Cancel(0, 3),)))
    assert result.violation is not None and "rid 0 was cancelled at step 3" in result.violation[2], result.violation


@pytest.mark.parametrize(("fault", "rule", "kwargs"), [
    ("DecodesAfterStop", "TOKENS", {"stop_token": STOP}),
    ("PlansCancelled", "CANCEL", {"cancels": (Cancel(0, 3),)}),
    ("LateStopRelease", "KV", {"stop_token": STOP}),
])
def test_real_path_catches_a_scheduler_that_mishandles_ends(fault: str, rule: str, kwargs: dict[str, object]) -> None:
    """Negative controls: wrong schedulers (stallfree.faults.lifecycle), monitor silenced, are caught
    on the real path: a stopped or cancelled request planned again, a stopped request's KV kept."""
    (result,) = play(Job(ROOMY, f"stallfree.faults.lifecycle:{fault}", NO_MONITOR, **kwargs))  # type: ignore[arg-type]
    assert result.violation is not None
    assert result.violation[0] == rule and result.violation[3] == "real path", result.violation


def test_exactness_with_stops_compares_like_with_like() -> None:
    """EXACTNESS: a run with stops equals the dense reference, which samples the end token exactly
    where the run stopped; a run that went on past its end token, or stopped without one, fails."""
    (result,) = play(Job(TIGHT, stop_token=STOP, keep_logits=True))
    spec = RunSpec((), tp=1, dtype="fp32")
    report = compare(spec, result, model(), stop_token=STOP)
    assert report.ok is True and report.num_stops == 1, report.summary()
    (ignored,) = play(Job(TIGHT, keep_logits=True))  # the same run with nobody told of the stop
    late = compare(spec, ignored, model(), stop_token=STOP)
    assert late.ok is False and "went on" in late.wrong_ends[0], late.summary()
    wrong = compare(spec, result, model(), stop_token=result.requests[0].outputs[0])
    assert wrong.ok is False, wrong.summary()


def test_isolation_replays_the_first_runs_stops() -> None:
    """ISOLATION with stops: the perturbed run stops each request where the first run did, so both
    make the same plans, and every other request's logits stay bit-for-bit equal."""
    job = Job(TIGHT, stop_token=STOP, keep_logits=True, cancels=(Cancel(3, 9),))
    twin = perturbed(job, 1, 0, 2048)
    base, changed = play(job, Job(twin.workload, prompts=twin.prompts, keep_logits=True, cancels=job.cancels,
                                  replay_ends=True))
    assert base.ok and changed.ok
    assert [s.plan for s in base.steps] == [s.plan for s in changed.steps]
    assert changed.requests[1].finish_reason == "stop" and changed.requests[1].outputs != base.requests[1].outputs
    report = isolation(base, changed, 1)
    assert report.ok is True and report.num_requests == 3, report.summary()
