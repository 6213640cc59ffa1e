"""Trace format v2 and the engine checker: v1 traces judge as the live monitor does (the reference
holds, each fault breaks its rule at the same step); the recorded vLLM 0.33 traces, imported, break
only what vLLM's policy really does; vLLM-shaped bugs planted in them are caught with the rule named;
v2's own facts (string rids, preemption, cached prefixes, finish reasons, runtime config, "x") are read
and judged; malformed lines name the line and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_conformance_trace import hand_lines, live_violation

from stallfree.conformance.engines.import_vllm import convert, load_config, load_workload, read_steps, whole_blocks
from stallfree.conformance.kit.profiles import PROFILES
from stallfree.conformance.trace.enginecheck import check_engine_trace
from stallfree.conformance.trace.tracecheck import check_trace
from stallfree.conformance.trace.tracefile import TraceError
from stallfree.conformance.trace.v2 import TraceWriterV2, schema
from stallfree.main import main
from stallfree.spec import RULE_IDS

TRACES = Path(__file__).parent / "data" / "engine-traces"
VLLM = sorted((TRACES / "vllm-0.33-v1").glob("*.jsonl"))
# What each recorded vLLM trace breaks, every entry a property of vLLM's policy (docs/conformance.md).
VLLM_BREAKS = {"w4_kv_pressure_preempt": {"KV": 1, "WORK-CONSERVING": 17}}


def imported(name: str) -> list[str]:
    """A recorded vLLM trace as trace v2 lines, through the converter `stallfree import-trace` runs."""
    steps = read_steps((TRACES / "vllm-0.33-v1" / f"{name}.jsonl").read_text().splitlines())
    config = load_config(TRACES / "workloads" / f"{name}.config.json")
    requests = load_workload(TRACES / "workloads" / f"{name}.json")
    import io

    out = io.StringIO()
    writer = TraceWriterV2(out, config)
    for step in whole_blocks(convert(steps, requests), config.block_size or 1):
        writer.step(step)
    writer.end()
    return out.getvalue().splitlines()


def broken(lines: list[str], rules: object = None) -> dict[str, int]:
    verdict = check_engine_trace(lines, rules)  # type: ignore[arg-type]
    return {rule: v.step for rule, (v, _) in verdict.violations.items()}


# -- v1 traces: the engine checker judges as the monitor does ---------------------------------------------------


# The reference's traces hold every rule under the engine checker too: tests/test_conformance_trace.py.
# KV: the trace's "finished", below. CANCEL: a v1 trace's cancel events are not read as finishes by the
# engine checker (the v1 checker judges them: tests/test_lifecycle_trace.py); a v2 trace's, below.
@pytest.mark.parametrize("rule", [r for r in RULE_IDS if r not in ("KV", "CANCEL")])
def test_a_faults_trace_breaks_its_rule_at_the_same_step_under_the_engine_checker(rule: str) -> None:
    _, live, lines = live_violation(rule)
    assert broken(lines, [rule]) == {rule: live.step}


def test_kv_returned_early_or_never_is_kv() -> None:
    early = hand_lines()
    early[5] = early[5].replace('"finished": []', '"finished": [0]')
    early[6] = early[6].replace('"finished": [0, 1]', '"finished": [1]')
    assert broken(early) == {"KV": 4}
    never = hand_lines()
    never[6] = never[6].replace('"finished": [0, 1]', '"finished": [1]')
    assert broken(never) == {"KV": 5}


# -- the recorded vLLM 0.33 traces ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", VLLM, ids=[p.stem for p in VLLM])
def test_vllm_traces_break_only_what_vllms_policy_does(path: Path) -> None:
    lines = imported(path.stem)
    assert broken(lines) == VLLM_BREAKS.get(path.stem, {})
    assert broken(lines, PROFILES["safety"]) == {}  # no false positive from a preemption or a cache hit


def test_the_preempting_trace_is_read_with_its_preemption_and_cached_resume() -> None:
    steps = [json.loads(line) for line in imported("w4_kv_pressure_preempt")[1:-1]]
    assert steps[17]["preempt"] == [[1, "recompute"]]
    assert steps[24]["admit"] == [[1, 32]]  # 16 + 17 tokens known, two whole blocks found cached
    assert [line for line in imported("w1_budget8_decode_plus_20prompt") if '"preempt"' in line] == []


def plant(lines: list[str], step: int, change: dict[str, object]) -> list[str]:
    data = json.loads(lines[step + 1])
    assert data["step"] == step
    data.update(change)
    return [*lines[:step + 1], json.dumps(data), *lines[step + 2:]]


def test_a_planted_budget_overrun_is_budget() -> None:
    lines = imported("w1_budget8_decode_plus_20prompt")
    step = next(i for i, line in enumerate(lines[1:-1]) if len(json.loads(line)["plan"]) == 2)
    plan = json.loads(lines[step + 1])["plan"]
    plan[1][1] += 1  # one prompt token more than the budget leaves
    assert broken(plant(lines, step, {"plan": plan}), ["BUDGET"]) == {"BUDGET": step}


def test_a_token_emitted_twice_after_a_preemption_is_tokens() -> None:
    lines = plant(imported("w4_kv_pressure_preempt"), 24, {"emitted": [1, 1]})  # the resumed request
    assert broken(lines, PROFILES["safety"]) == {"TOKENS": 24}
    lines = imported("w4_kv_pressure_preempt")
    last = json.loads(lines[-2])  # rid 1's last token and the return of its KV
    extra = {"step": last["step"] + 1, "plan": [[1, 1]], "emitted": [1], "finished": [1]}
    lines = [*plant(lines, last["step"], {"finished": []})[:-1], json.dumps(extra), lines[-1]]
    assert broken(lines, PROFILES["safety"]) == {"TOKENS": extra["step"]}  # one token more than max_new


def test_a_request_preempted_and_never_resumed_is_progress() -> None:
    lines = imported("w4_kv_pressure_preempt")
    truncated = [*lines[:25], lines[-1]]  # steps 0..23, then the end line: rid 1 never comes back
    verdict = check_engine_trace(truncated, ["PROGRESS"])
    assert "rid 1 preempted at step 17 and never resumed" in verdict.violations["PROGRESS"][0].message


# -- v2's own facts ---------------------------------------------------------------------------------------------

HEADER = '{"stallfree_trace": 2, "config": {"token_budget": 8, "max_seqs": 2, "kv_tokens": 64, "block_size": 16}}'


def test_string_rids_stop_and_cancel_and_engine_facts() -> None:
    lines = [
        HEADER,
        '{"step": 0, "add": [["a", 4, 6], ["b", 3, 2]], "plan": [["a", 4], ["b", 3]], "emitted": ["a", "b"], '
        '"finished": [], "x": {"myengine": {"queue_ms": 3}}}',
        '{"step": 1, "plan": [["a", 1], ["b", 1]], "emitted": ["a", "b"], "finished": [["a", "stop"], "b"]}',
        '{"end": true}',
    ]
    assert broken(lines) == {}
    early = [*lines[:2], lines[2].replace('[["a", "stop"], "b"]', '["a", "b"]'), lines[3]]
    # "length" after 2 of 6 tokens: the KV came back too early, and the request never got its 6 tokens.
    assert broken(early) == {"KV": 1, "PROGRESS": 1}


def test_a_cancel_outside_the_plan_is_a_withdrawal_before_the_step() -> None:
    lines = [
        HEADER,
        '{"step": 0, "add": [[0, 2, 3], [1, 2, 3]], "plan": [[0, 2], [1, 2]], "emitted": [0, 1], "finished": []}',
        '{"step": 1, "plan": [[0, 1]], "emitted": [0], "finished": [[1, "cancel"]]}',
        '{"step": 2, "plan": [[0, 1]], "emitted": [0], "finished": [0]}',
        '{"end": true}',
    ]
    assert broken(lines) == {}
    planned = [lines[0], lines[1], lines[2].replace('"plan": [[0, 1]]', '"plan": [[0, 1], [1, 1]]')
               .replace('"emitted": [0]', '"emitted": [0, 1]'), *lines[3:]]
    assert broken(planned) == {}  # cancelled after the step that ran it
    kept = [lines[0], lines[1], lines[2].replace(', "finished": [[1, "cancel"]]', ', "finished": []'), *lines[3:]]
    assert "DECODE-FIRST" in broken(kept)  # not cancelled: rid 1 was ready and got no token


def test_CANCEL_a_cancelled_request_planned_or_emitting_after_its_cancel_is_caught() -> None:
    lines = [
        HEADER,
        '{"step": 0, "add": [[0, 2, 4], [1, 2, 4]], "plan": [[0, 2], [1, 2]], "emitted": [0, 1], "finished": []}',
        '{"step": 1, "plan": [[0, 1], [1, 1]], "emitted": [0, 1], "finished": [[1, "cancel"]]}',
        '{"step": 2, "plan": [[0, 1]], "emitted": [0], "finished": []}',
        '{"step": 3, "plan": [[0, 1]], "emitted": [0], "finished": [0]}',
        '{"end": true}',
    ]
    verdict = check_engine_trace(lines)
    assert verdict.ok and "CANCEL" in verdict.partial and "CANCEL" not in verdict.not_judged
    planned = [*lines[:3], lines[3].replace('"plan": [[0, 1]]', '"plan": [[0, 1], [1, 1]]'), *lines[4:]]
    assert broken(planned) == {"CANCEL": 2}  # no clock: rid 1 planned after its cancel, in a fixed trace
    v = check_engine_trace(planned).violations["CANCEL"][0]
    assert "plan names rid 1, which was cancelled at step 1" in v.message
    emitting = [*lines[:3], lines[3].replace('"emitted": [0]', '"emitted": [0, 1]'), *lines[4:]]
    assert broken(emitting, ["CANCEL"]) == {"CANCEL": 2}
    last = (lines[4].replace('"plan": [[0, 1]]', '"plan": [[0, 1], [1, 1]]')
            .replace('"emitted": [0]', '"emitted": [0, 1]').replace('"finished": [0]', '"finished": [0, [1, "stop"]]'))
    finished = [*lines[:2], lines[2].replace('[[1, "cancel"]]', "[]"), lines[3], last, lines[5]]
    planned_after_stop = [*finished[:4], finished[4], '{"step": 4, "plan": [[1, 1]], "emitted": [1], "finished": []}',
                          finished[5]]
    assert "CANCEL" not in broken(planned_after_stop)  # a stopped request planned again is TOKENS', not CANCEL's
    assert "TOKENS" in broken(planned_after_stop)


def test_CANCEL_a_cancelled_request_admitted_again_is_caught_by_CANCEL_not_PROTOCOL() -> None:
    # rid 1 is withdrawn while it waits, then admitted when rid 0 ends: an engine's abort that missed its
    # waiting queue. The admission is no protocol error hiding the break: the plan naming it is CANCEL's.
    lines = [
        HEADER,
        '{"step": 0, "add": [[0, 2, 2], [1, 2, 2]], "admit": [[0, 0]], "plan": [[0, 2]], "emitted": [0], '
        '"finished": []}',
        '{"step": 1, "plan": [[0, 1]], "emitted": [0], "finished": [0, [1, "cancel"]]}',
        '{"step": 2, "admit": [[1, 0]], "plan": [[1, 2]], "emitted": [1], "finished": []}',
    ]
    assert broken(lines, ["CANCEL", "TOKENS"]) == {"CANCEL": 2}
    stopped = [*lines[:2], lines[2].replace('[1, "cancel"]', '[1, "stop"]'), lines[3]]
    assert broken(stopped, ["CANCEL", "TOKENS"]) == {"TOKENS": 2}  # one that ended otherwise: TOKENS
    # The admission alone breaks it: an ended request admitted and never planned is caught at the admit.
    admitted_only = [*lines[:3], '{"step": 2, "admit": [[1, 0]], "plan": [], "emitted": [], "finished": []}']
    assert broken(admitted_only, ["CANCEL", "TOKENS"]) == {"CANCEL": 2}


def test_CANCEL_is_not_judged_on_a_trace_that_cancels_nothing() -> None:
    verdict = check_engine_trace(imported("w4_kv_pressure_preempt"))
    assert verdict.not_judged == {"CANCEL": "(the trace cancels no request)"}


def test_a_runtime_config_change_is_in_force_from_its_step() -> None:
    lines = [
        HEADER,
        '{"step": 0, "add": [[0, 20, 2]], "plan": [[0, 8]], "emitted": [], "finished": []}',
        '{"step": 1, "config": {"token_budget": 4}, "plan": [[0, 8]], "emitted": [], "finished": []}',
    ]
    assert broken(lines, ["BUDGET"]) == {"BUDGET": 1}


def test_a_cached_prefix_is_not_recomputed_and_is_not_a_first_token_break() -> None:
    lines = [
        HEADER,
        '{"step": 0, "add": [[0, 40, 2]], "admit": [[0, 32]], "plan": [[0, 8]], "emitted": [0], "finished": []}',
        '{"step": 1, "plan": [[0, 1]], "emitted": [0], "finished": [0]}',
        '{"end": true}',
    ]
    assert broken(lines) == {}
    assert broken([lines[0], lines[1].replace('"admit": [[0, 32]], ', ""), *lines[2:]]) \
        .keys() >= {"FIRST-TOKEN"}  # without the cache hit, 8 of 40 tokens cannot emit


@pytest.mark.parametrize(("line", "words"), [
    ('{"step": 0, "plan": [], "emitted": [], "finished": [], "queue": 3}', "unknown field(s) ['queue']"),
    ('{"step": 0, "plan": [["", 1]], "emitted": [], "finished": []}', "plan[0] rid must be an int"),
    ('{"step": 0, "preempt": [[0, "drop"]], "plan": [], "emitted": [], "finished": []}',
     "preempt[0] kind must be one of recompute, swap"),
    ('{"step": 0, "plan": [], "emitted": [], "finished": [[0, "eos"]]}', "finished[0] reason must be one of"),
    ('{"step": 0, "plan": [], "emitted": [], "finished": [], "x": {"a": 1}}', "x must be an object of objects"),
])
def test_a_malformed_v2_line_names_the_line_and_the_field(line: str, words: str) -> None:
    with pytest.raises(TraceError, match="line 2: ") as error:
        check_engine_trace([HEADER, line])
    assert words in str(error.value)


def test_check_trace_judges_v2_and_v1_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w4.jsonl"
    path.write_text("\n".join(imported("w4_kv_pressure_preempt")) + "\n")
    assert main(["check-trace", str(path), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "KV               BROKEN at step 1 (line 3)" in out and "this engine pages its KV" in out
    assert "TOKENS           holds (31 steps)" in out
    assert "CANCEL           not judged (the trace cancels no request)" in out
    assert "NEVER-FIT        holds (31 steps; partial: the trace lists no refusals" in out
    assert main(["check-trace", str(path), "--quiet", "--profile", "safety"]) == 0
    assert check_trace(hand_lines()).ok  # v1 goes to the monitor, as before


def test_import_trace_writes_v2_and_reports_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "w4.jsonl"
    source = TRACES / "vllm-0.33-v1" / "w4_kv_pressure_preempt.jsonl"
    assert main(["import-trace", str(source), "-o", str(out)]) == 0  # the workload found beside it
    assert [json.loads(x) for x in out.read_text().splitlines()[1:]] == \
        [json.loads(x) for x in imported("w4_kv_pressure_preempt")[1:]]
    lonely = tmp_path / "w4.jsonl.copy"
    lonely.write_text(source.read_text())
    assert main(["import-trace", str(lonely)]) == 2
    err = capsys.readouterr().err
    assert "stallfree import-trace:" in err and "No such file" in err and "Traceback" not in err
    bad = tmp_path / "bad.json"
    bad.write_text("[1")
    assert main(["import-trace", str(source), "--workload", str(bad)]) == 2
    assert f"{bad}: not valid JSON" in capsys.readouterr().err
    steps = tmp_path / "steps.jsonl"
    steps.write_text('{"step": 0}\n')
    assert main(["import-trace", str(steps), "--workload", str(TRACES / "workloads" / "w4_kv_pressure_preempt.json"),
                 "--config", str(TRACES / "workloads" / "w4_kv_pressure_preempt.config.json")]) == 2
    assert f"{steps}: line 1: a vLLM step line has the fields" in capsys.readouterr().err


def test_the_schema_ships_with_the_package() -> None:
    s = schema()
    assert [branch["title"] for branch in s["oneOf"]] == ["header", "step", "end"]


rid_values = st.sampled_from([0, 1, 2, "a"])
entry = st.tuples(rid_values, st.integers(0, 5)).map(list)
step_line = st.fixed_dictionaries({
    "plan": st.lists(entry, max_size=4), "emitted": st.lists(rid_values, max_size=3),
    "finished": st.lists(st.one_of(rid_values, st.tuples(rid_values, st.sampled_from(["length", "stop", "cancel"]))
                                   .map(list)), max_size=2),
}, optional={
    "add": st.lists(st.tuples(rid_values, st.integers(0, 6), st.integers(0, 4)).map(list), max_size=3),
    "admit": st.lists(st.tuples(rid_values, st.integers(0, 8)).map(list), max_size=3),
    "preempt": st.lists(st.tuples(rid_values, st.sampled_from(["recompute", "swap"])).map(list), max_size=2),
    "config": st.fixed_dictionaries({}, optional={"token_budget": st.integers(1, 6), "max_seqs": st.integers(1, 3)}),
    "refuse": st.lists(st.tuples(rid_values, st.integers(-1, 9), st.integers(0, 3)).map(list), max_size=2),
})


@given(st.lists(step_line, max_size=8), st.booleans())
def test_fuzz_any_v2_engine_behaviour_is_judged_never_a_crash(steps: list[dict[str, object]], end: bool) -> None:
    lines = [HEADER] + [json.dumps({"step": i, **s}) for i, s in enumerate(steps)] + (['{"end": true}'] if end else [])
    verdict = check_engine_trace(lines)
    assert verdict.lines == len(lines) or "PROTOCOL" in verdict.violations
