"""A whole vLLM engine run (dummy weights, CPU) recorded as trace v2 by a Scheduler subclass passed
as vLLM's scheduler_cls: vLLM preempts a request and resumes it from its prefix cache, and the trace
shows it; every line follows the shipped schema; the safety rules hold (no false positive from the
preemption or the cache hit) and KV's reservation, which vLLM does not take up front, breaks."""

from __future__ import annotations

import io
import json

from vllm_guard import require_vllm

require_vllm()

from stallfree.conformance.engines.vllm_recorder import record_engine_run  # noqa: E402
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
