"""check-trace with stops and cancels: a correct engine's trace in which requests stop at their end
token (and are cancelled) checks clean; one that keeps a stopped request's KV reserved, plans a
cancelled request, stops a request on a token it did not emit, or cancels an ended one is caught,
naming KV, CANCEL, TOKENS. Traces without stops or cancels check as before (test_conformance_trace)."""

from __future__ import annotations

import io
import json
import random

import pytest

from stallfree.conformance.trace.record import record_trace
from stallfree.conformance.trace.tracecheck import check_trace
from stallfree.conformance.trace.tracefile import TraceError
from stallfree.faults import FAULTS, LIFECYCLE_FAULTS
from stallfree.reference import Scheduler
from stallfree.spec import play
from stallfree.testing.generate import Ranges, random_workload

LIFECYCLE = Ranges(max_budget=16, max_seqs=4, max_prompt=20, max_new=8, max_requests=8, max_gap=3,
                   stop_share=0.5, cancel_share=0.3)
HEADER = {"stallfree_trace": 1, "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64}}


def lines_of(*items: dict[str, object]) -> list[str]:
    return [json.dumps(HEADER), *(json.dumps(item) for item in items)]


def eos_trace() -> list[dict[str, object]]:
    """Two requests of max_new 6; rid 0 samples its end token on its 2nd token, rid 1 is cancelled
    between steps 2 and 3. A correct engine returns rid 0's KV on the stop step."""
    return [
        {"step": 0, "add": [[0, 4, 6], [1, 3, 6]], "plan": [[0, 4], [1, 3]], "emitted": [0, 1], "finished": []},
        {"step": 1, "plan": [[0, 1], [1, 1]], "stop": [0], "emitted": [0, 1], "finished": [0]},
        {"step": 2, "add": [[2, 5, 2]], "plan": [[1, 1], [2, 5]], "emitted": [1, 2], "finished": []},
        {"step": 3, "cancel": [1], "plan": [[2, 1]], "emitted": [2], "finished": [2]},
        {"end": True},
    ]


def test_a_correct_EOS_trace_checks_clean() -> None:
    verdict = check_trace(lines_of(*eos_trace()))
    assert verdict.ok and verdict.ended and verdict.steps == 4, verdict.violation


def test_KV_a_trace_keeping_a_stopped_requests_KV_reserved_is_caught() -> None:
    items = eos_trace()
    items[1]["finished"] = []  # the engine returns rid 0's reservation one step late
    items[2]["finished"] = [0]
    verdict = check_trace(lines_of(*items))
    assert verdict.violation is not None and verdict.violation.rule == "KV", verdict.violation
    assert verdict.violation.step == 1 and "finished this step: [0]" in verdict.violation.message
    assert verdict.violation_line == 3


def test_CANCEL_a_trace_planning_a_cancelled_request_is_caught() -> None:
    items = eos_trace()
    items[4:4] = [{"step": 4, "plan": [[1, 1]], "emitted": [1], "finished": []}]
    verdict = check_trace(lines_of(*items))
    assert verdict.violation is not None and verdict.violation.rule == "CANCEL", verdict.violation
    assert verdict.violation.message == "plan names rid 1, which was cancelled at step 3"


def test_TOKENS_a_trace_stopping_a_request_on_a_token_it_did_not_emit_is_caught() -> None:
    items = eos_trace()
    items[2]["stop"] = [0]  # rid 0 ended on step 1: nothing of it runs on step 2
    verdict = check_trace(lines_of(*items))
    assert verdict.violation is not None and verdict.violation.rule == "TOKENS"
    assert verdict.violation.message.startswith('"stop" names rid 0, which emits no token in step 2')


def test_CANCEL_a_trace_cancelling_an_ended_request_is_caught() -> None:
    items = eos_trace()
    items[3]["cancel"] = [1, 0]
    verdict = check_trace(lines_of(*items))
    assert verdict.violation is not None and verdict.violation.rule == "CANCEL"
    assert verdict.violation.message == "cancel(0) was accepted but must be refused: rid 0 stopped at step 1"


def test_the_lifecycle_fields_are_checked_like_the_others() -> None:
    items = eos_trace()
    items[1]["stop"] = ["0"]
    with pytest.raises(TraceError, match=r'line 3: stop\[0\] must be an int in \[0, 2\*\*63-1\], got "0"'):
        check_trace(lines_of(*items))
    items[1]["stop"] = 0
    with pytest.raises(TraceError, match="line 3: stop must be a list, got 0"):
        check_trace(lines_of(*items))


@pytest.mark.parametrize("seed", range(25))
def test_reference_traces_with_stops_and_cancels_check_clean(seed: int) -> None:
    workload = random_workload(random.Random(seed), LIFECYCLE)
    out = io.StringIO()
    stats = record_trace(workload, Scheduler, out)
    verdict = check_trace(out.getvalue().splitlines())
    assert verdict.ok and verdict.ended, verdict.violation
    assert verdict.steps == stats.steps == play(workload, Scheduler).steps


# KV's faults are left out: a recorded trace's "finished" is the monitor's account, not the engine's
# (the hand-made KV trace above is the control). StopsAnyRid needs a bad stop, which play never offers.
TRACE_FAULTS = [f for f in (FAULTS["CANCEL"], *LIFECYCLE_FAULTS) if f.breaks != "KV" and f.__name__ != "StopsAnyRid"]


@pytest.mark.parametrize("fault", TRACE_FAULTS, ids=lambda f: f"{f.breaks}-{f.__name__}")
def test_a_lifecycle_faults_trace_breaks_its_rule(fault: type) -> None:
    for seed in range(300):
        out = io.StringIO()
        try:
            record_trace(random_workload(random.Random(seed), LIFECYCLE), fault, out)
        except (KeyError, ValueError):
            continue  # the fault's own bookkeeping broke once the rule was not checked: another workload
        verdict = check_trace(out.getvalue().splitlines(), [fault.breaks])
        if not verdict.ok:
            assert verdict.violation is not None and verdict.violation.rule == fault.breaks, verdict.violation
            return
    pytest.fail(f"no trace of {fault.__name__} broke {fault.breaks}")
