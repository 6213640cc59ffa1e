"""SGLang's runs logged as scheduling events (`sglang_recorder`) convert with `stallfree import-trace
--from events` to trace v2, and `check-trace` judges them as the live kit does: the safety rules hold,
and the decode that waits for a prefill batch is DECODE-FIRST broken at the same step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sglang_guard import require_sglang

require_sglang()

from stallfree.conformance.engines.sglang_recorder import record  # noqa: E402
from stallfree.conformance.trace.enginecheck import check_engine_trace  # noqa: E402
from stallfree.main import main  # noqa: E402
from stallfree.spec import Workload  # noqa: E402

W = Workload.from_json({  # rid 0 decodes; a 20-token prompt arrives at step 2; budget 8
    "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64},
    "requests": [{"rid": 0, "prompt_len": 4, "max_new": 6, "arrival_step": 0},
                 {"rid": 1, "prompt_len": 20, "max_new": 3, "arrival_step": 2}]})


def imported(tmp_path: Path, events: list[dict[str, object]], capsys: pytest.CaptureFixture[str]) -> list[str]:
    log, config, out = tmp_path / "events.jsonl", tmp_path / "config.json", tmp_path / "v2.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    config.write_text(json.dumps({"token_budget": 8, "max_seqs": 4, "kv_tokens": 64, "block_size": 1}))
    status = main(["import-trace", "--from", "events", str(log), "--config", str(config), "-o", str(out)])
    assert status == 0, capsys.readouterr().err
    return out.read_text().splitlines()


def test_an_sglang_run_as_events_is_judged_by_check_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = record(W)
    assert events[-1] == {"step": 9, "event": "end"}  # 9 steps: rid 0 emits at 0, 1 and 5-8
    plans = [(e["step"], e["rid"], e["tokens"]) for e in events if e["event"] == "schedule"]
    assert plans[:5] == [(0, 0, 4), (1, 0, 1), (2, 1, 8), (3, 1, 8), (4, 1, 4)]  # rid 0 waits at steps 2-4
    lines = imported(tmp_path, events, capsys)
    safe = check_engine_trace(lines, ["BUDGET", "SLOTS", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", "PROGRESS"])
    assert safe.ok and safe.ended, safe
    policy = check_engine_trace(lines, ["DECODE-FIRST"])
    violation, _ = policy.violations["DECODE-FIRST"]
    assert violation.step == 2


def test_a_run_that_has_not_ended_is_logged_without_its_end() -> None:
    events = record(W, max_steps=3)
    assert {e["step"] for e in events} == {0, 1, 2} and all(e["event"] != "end" for e in events)


def test_the_planted_chunk_overrun_is_caught_on_its_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stallfree.conformance.engines.sglang_faults import ChunkOneOver
    lines = imported(tmp_path, record(W, factory=ChunkOneOver), capsys)
    verdict = check_engine_trace(lines, ["BUDGET"])
    violation, _ = verdict.violations["BUDGET"]
    assert violation.step == 2 and "9 tokens" in str(violation)


STOPS = Workload.from_json({  # rid 0 stops on its 2nd token, rid 1 on its 1st (its last chunk's)
    "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64},
    "requests": [{"rid": 0, "prompt_len": 4, "max_new": 6, "arrival_step": 0, "stop_after": 2},
                 {"rid": 1, "prompt_len": 12, "max_new": 3, "arrival_step": 0, "stop_after": 1}]})


@pytest.mark.parametrize("factory", ["SglangEnds", "SglangStopStrings"])
def test_sglangs_stops_are_logged_as_stops_and_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      factory: str) -> None:
    from stallfree.conformance.engines import sglang_ends
    events = record(STOPS, factory=getattr(sglang_ends, factory))
    ends = {e["rid"]: (e["step"], e["reason"]) for e in events if e["event"] == "finish"}
    # step 0 prefills rid 0 (4) and 4 of rid 1's 12; step 1, a prefill batch alone, the other 8 (rid 1's
    # first token, its stop) while rid 0 waits; step 2 decodes rid 0's second token, its stop
    assert ends == {0: (2, "stop"), 1: (1, "stop")}
    lines = imported(tmp_path, events, capsys)
    safe = check_engine_trace(lines, ["BUDGET", "SLOTS", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", "KV", "PROGRESS"])
    assert safe.ok and safe.ended, safe.violations
    assert set(check_engine_trace(lines).violations) == {"DECODE-FIRST"}  # rid 0 waits at step 1, as live


def test_a_stop_sglang_ignores_is_caught_on_its_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stallfree.conformance.engines.sglang_end_faults import StopIgnored
    lines = imported(tmp_path, record(STOPS, factory=StopIgnored, max_steps=4), capsys)
    violation, _ = check_engine_trace(lines, ["TOKENS"]).violations["TOKENS"]
    assert violation.step == 2 and "plan names rid 1" in str(violation)  # rid 1 stopped at step 1, runs on


def test_the_plain_adapter_refuses_a_workload_with_stops() -> None:
    with pytest.raises(ValueError, match="has no stops"):
        record(STOPS)


# one slot: rid 1 waits behind rid 0 and is cancelled there (SGLang pops it from its queue at once)
CANCEL_WAITING = Workload.from_json({
    "config": {"token_budget": 8, "max_seqs": 1, "kv_tokens": 64},
    "requests": [{"rid": 0, "prompt_len": 4, "max_new": 4, "arrival_step": 0},
                 {"rid": 1, "prompt_len": 3, "max_new": 4, "arrival_step": 0},
                 {"rid": 2, "prompt_len": 2, "max_new": 2, "arrival_step": 0}],
    "cancels": [{"rid": 1, "step": 1}]})
# rid 0 decodes at steps 1 and 2 and is cancelled before step 3; rid 1 runs beside it
CANCEL_RUNNING = Workload.from_json({
    "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64},
    "requests": [{"rid": 0, "prompt_len": 4, "max_new": 6, "arrival_step": 0},
                 {"rid": 1, "prompt_len": 4, "max_new": 6, "arrival_step": 0}],
    "cancels": [{"rid": 0, "step": 3}, {"rid": 7, "step": 3}]})  # rid 7 never added: refused, not logged


def ends(events: list[dict[str, object]]) -> dict[object, tuple[object, object]]:
    return {e["rid"]: (e["step"], e["reason"]) for e in events if e["event"] == "finish"}


def test_sglangs_abort_of_a_waiting_request_is_logged_as_a_cancel_and_judged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stallfree.conformance.engines.sglang_ends import SglangEnds
    events = record(CANCEL_WAITING, factory=SglangEnds)
    assert ends(events) == {1: (1, "cancel"), 0: (3, "length"), 2: (5, "length")}  # withdrawn before step 1
    assert all(e["rid"] != 1 for e in events if e["event"] in ("schedule", "emit"))
    lines = imported(tmp_path, events, capsys)
    verdict = check_engine_trace(lines, ["BUDGET", "SLOTS", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", "CANCEL",
                                         "PROGRESS"])
    assert verdict.ok and verdict.ended, verdict.violations
    assert "CANCEL" not in verdict.not_judged  # judged on a cancel, not left `not judged`


@pytest.mark.parametrize("pending", [False, True], ids=["between steps", "while step 2 runs"])
def test_sglangs_extra_decode_after_aborting_a_running_request_is_the_cancel_break(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], pending: bool) -> None:
    from stallfree.conformance.engines.sglang_ends import SglangEnds
    w = CANCEL_RUNNING
    if pending:  # offered while step 2's plan is pending: it ends with step 2 all the same
        w = Workload.from_json({**json.loads(w.dumps()), "cancels": [{"rid": 0, "step": 2, "pending": True}]})
    events = record(w, factory=SglangEnds)
    assert ends(events)[0] == (2, "cancel")  # it ended after step 2, its last step before the cancel
    assert {"step": 3, "event": "schedule", "rid": 0, "tokens": 1} in events  # SGLang's one more decode
    lines = imported(tmp_path, events, capsys)
    violation, _ = check_engine_trace(lines, ["CANCEL"]).violations["CANCEL"]
    assert violation.step == 3 and "rid 0" in str(violation)
    safe = check_engine_trace(lines, ["BUDGET", "SLOTS", "PREFILL-ONCE", "FIRST-TOKEN", "PROGRESS"])
    assert safe.ok and safe.ended, safe.violations


def test_the_planted_abort_that_leaves_a_request_waiting_is_caught_on_its_trace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stallfree.conformance.engines.sglang_end_faults import AbortLeavesWaiting
    lines = imported(tmp_path, record(CANCEL_WAITING, factory=AbortLeavesWaiting), capsys)
    violation, _ = check_engine_trace(lines, ["CANCEL"]).violations["CANCEL"]
    assert "rid 1" in str(violation)  # the cancelled rid 1 is admitted when rid 0 ends


def test_the_plain_adapter_refuses_a_workload_with_cancels() -> None:
    with pytest.raises(ValueError, match="has no cancels"):
        record(CANCEL_WAITING)
