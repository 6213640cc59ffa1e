"""Stops and cancels through a whole vLLM engine and its recorder: an EOS the model samples (no
ignore_eos) ends a request in vLLM's scheduler, a stop string ends it in vLLM's front end (which then
aborts it in the scheduler), and a client's abort withdraws it. The trace names the first two stops,
on the step whose token ended them, and the third a cancel; the lifecycle rules judge them, with no
false break, and a planted scheduler that keeps a stopped request running is caught."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

from vllm_guard import require_vllm

require_vllm()

from stallfree.conformance.engines.vllm_recorder import TraceRecorder, record_engine_run  # noqa: E402
from stallfree.conformance.trace.enginecheck import check_engine_trace  # noqa: E402
from stallfree.spec import Arrival, Config, Workload  # noqa: E402

# Three requests of 10 + 12 tokens: rid 0 samples EOS as its 5th token, rid 1's text reaches its stop
# string at its 3rd, the client aborts rid 2 before step 4.
WORKLOAD = Workload(Config(32, 4, 96), (Arrival(0, 10, 12, 0), Arrival(1, 10, 12, 0), Arrival(2, 10, 12, 0)))


def steps_of(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()[1:-1]]


def ends(steps: list[dict[str, Any]]) -> dict[str, tuple[int, str]]:
    """rid (vLLM's request id, its first part) -> (step, reason) of its end in the trace."""
    found = {}
    for s in steps:
        for entry in s["finished"]:
            rid, reason = (entry, "length") if isinstance(entry, str) else entry
            found[rid.split("-")[0]] = (s["step"], reason)
    return found


def test_eos_stop_strings_and_aborts_are_recorded_as_stops_and_a_cancel_and_judged() -> None:
    out = io.StringIO()
    done = record_engine_run(WORKLOAD, out, stops={0: 5}, stop_strings={1: 3}, cancel={2: 4})
    reasons = {o.request_id.split("-")[0]: (len(o.outputs[0].token_ids), o.outputs[0].finish_reason) for o in done}
    assert reasons["0"] == (5, "stop") and reasons["1"] == (3, "stop")
    steps = steps_of(out)
    # step 0 prefills all three and emits their first tokens: token k comes at step k - 1
    assert ends(steps) == {"0": (4, "stop"), "1": (2, "stop"), "2": (4, "cancel")}
    lines = out.getvalue().splitlines()
    verdict = check_engine_trace(lines)
    assert verdict.ok, verdict.violations


class KeepsStoppedRunning(TraceRecorder):
    """A planted fault: a request vLLM's stop check ended is put back in the running queue, so it is
    scheduled again after its stop."""

    def update_from_output(self, scheduler_output: Any, model_runner_output: Any) -> Any:
        live = dict(self.requests)
        outputs = super().update_from_output(scheduler_output, model_runner_output)
        from vllm.v1.request import RequestStatus

        for engine_outputs in outputs.values():
            for o in engine_outputs.outputs:
                if o.finish_reason is not None and o.request_id in live and o.request_id not in self.requests:
                    request = live[o.request_id]
                    request.status = RequestStatus.RUNNING  # the bug: stopped, yet still running
                    self.requests[o.request_id] = request
                    self.running.append(request)
        return outputs


def test_a_stopped_request_kept_running_is_caught_in_its_trace() -> None:
    out = io.StringIO()
    w = Workload(Config(32, 4, 96), (Arrival(0, 10, 3, 0), Arrival(1, 10, 12, 0)))
    with contextlib.suppress(Exception):  # vLLM may fail on the request it no longer tracks: the trace counts
        record_engine_run(w, out, stops={0: 2}, recorder=KeepsStoppedRunning)
    lines = out.getvalue().splitlines()
    assert ends(steps_of(out))["0"] == (1, "stop")
    verdict = check_engine_trace(lines)
    # step 2 plans rid 0 again (vLLM then dies on it: the recorder's provisional line is the trace's last)
    assert set(verdict.violations) == {"TOKENS"}, verdict.violations
    violation, _ = verdict.violations["TOKENS"]
    assert violation.step == 2 and "finished at step 1" in violation.message
