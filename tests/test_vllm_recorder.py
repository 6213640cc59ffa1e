"""A whole vLLM engine run (dummy weights, CPU) recorded as trace v2 by a Scheduler subclass passed
as vLLM's scheduler_cls: vLLM preempts a request and resumes it from its prefix cache, and the trace
shows it; every line follows the shipped schema; the safety rules hold (no false positive from the
preemption or the cache hit) and KV's reservation, which vLLM does not take up front, breaks. A step
is written before it runs: an engine that dies in it leaves that step in the trace, judged."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from vllm_guard import require_vllm

require_vllm()

from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402

from stallfree.conformance.engines.vllm_recorder import TraceRecorder, record_engine_run  # noqa: E402
from stallfree.conformance.kit.profiles import PROFILES  # noqa: E402
from stallfree.conformance.trace.enginecheck import check_engine_trace  # noqa: E402
from stallfree.conformance.trace.v2 import schema  # noqa: E402
from stallfree.spec import Arrival, Config, Workload  # noqa: E402

# Three 32-token blocks: two 20 + 40 requests start on one block each, and both need a second as they
# decode, so vLLM preempts one; it resumes after the other finishes, its freed blocks found cached.
WORKLOAD = Workload(Config(32, 8, 96), (Arrival(0, 20, 40, 0), Arrival(1, 20, 40, 0), Arrival(2, 8, 4, 1)))


def test_a_whole_engine_run_is_recorded_and_judged() -> None:
    import jsonschema

    out = io.StringIO()
    done = record_engine_run(WORKLOAD, out)
    assert sorted(len(o.outputs[0].token_ids) for o in done) == [4, 40, 40]
    lines = out.getvalue().splitlines()
    validator = jsonschema.Draft202012Validator(schema())
    for line in lines:
        validator.validate(json.loads(line))
    steps = [json.loads(line) for line in lines[1:-1]]
    preempted = [(s["step"], rid) for s in steps for rid, kind in s.get("preempt", []) if kind == "recompute"]
    assert preempted, "vLLM did not preempt: the workload no longer shows what this test is about"
    _, victim = preempted[0]
    resumed = [cached for s in steps[preempted[0][0]:] for rid, cached in s.get("admit", []) if rid == victim]
    assert resumed and resumed[0] > 0 and resumed[0] % 32 == 0  # its blocks found again in the prefix cache
    assert all(isinstance(rid, str) for s in steps for rid, _ in s["plan"])  # vLLM's own request ids
    assert check_engine_trace(lines, PROFILES["safety"]).ok
    verdict = check_engine_trace(lines)
    assert set(verdict.violations) == {"KV"} and "pages its KV" in verdict.violations["KV"][0].message


def test_a_request_the_client_cancels_is_recorded_as_cancel_and_judged_without_false_breaks() -> None:
    out = io.StringIO()
    w = Workload(Config(32, 4, 64), (Arrival(0, 10, 12, 0), Arrival(1, 10, 12, 0)))
    record_engine_run(w, out, cancel={1: 3})
    lines = out.getvalue().splitlines()
    cancelled = [json.loads(x)["step"] for x in lines[1:-1] if '"cancel"]' in x]
    assert cancelled == [3]
    assert check_engine_trace(lines).ok  # rid 1 was withdrawn before step 3: no rule expects its token there


FATAL = 2  # the step the planted fault overruns the budget in, and whose forward pass then dies


class OverrunsAndDies(Scheduler):
    """vLLM's scheduler with a planted fault: step FATAL schedules a budget's worth of tokens too many,
    and the engine dies before that step's output comes back."""

    scheduled = 0

    def schedule(self, *args: Any, **kwargs: Any) -> Any:
        output = super().schedule(*args, **kwargs)
        if self.scheduled == FATAL:
            rid = next(iter(output.num_scheduled_tokens))
            output.num_scheduled_tokens[rid] += self.scheduler_config.max_num_batched_tokens
        self.scheduled += 1
        return output

    def update_from_output(self, scheduler_output: Any, model_runner_output: Any) -> Any:
        if self.scheduled == FATAL + 1:
            raise RuntimeError("planted: the forward pass of the overrun step died")
        return super().update_from_output(scheduler_output, model_runner_output)


class PlantedCrash(TraceRecorder, OverrunsAndDies):
    """The recorder riding on the planted fault, as on vLLM's own scheduler."""


def test_the_step_that_crashes_the_engine_is_in_the_trace_and_judged() -> None:
    import jsonschema

    out = io.StringIO()
    w = Workload(Config(32, 4, 64), (Arrival(0, 10, 12, 0), Arrival(1, 10, 12, 0)))
    with pytest.raises(Exception):  # noqa: B017 (the planted RuntimeError, or vLLM's own on the overrun)
        record_engine_run(w, out, recorder=PlantedCrash)
    lines = out.getvalue().splitlines()
    validator = jsonschema.Draft202012Validator(schema())
    for line in lines:
        validator.validate(json.loads(line))
    last = json.loads(lines[-1])
    assert len(lines) == 1 + FATAL + 1 and last["step"] == FATAL and last["ran"] is False and last["emitted"] == []
    assert sum(n for _, n in last["plan"]) > 32
    verdict = check_engine_trace(lines)
    # The planted plan gives a decode 33 tokens: past the budget, and not one token. Both are judged at the
    # fatal step; no token rule breaks for what the step never got to emit.
    assert set(verdict.violations) == {"BUDGET", "TOKENS"}, verdict.violations
    assert all(v.step == FATAL for v, _ in verdict.violations.values())
    assert "a decode is exactly 1 token" in verdict.violations["TOKENS"][0].message
    assert verdict.unfinished_step == FATAL and not verdict.ended
