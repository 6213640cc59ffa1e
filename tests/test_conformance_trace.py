"""check-trace: traces round-trip from `stallfree trace --jsonl`; a trace shows the same broken rule at
the same step as the live monitor; malformed input gives a line-numbered error, never a traceback
(fuzzed with Hypothesis); memory stays flat in trace length."""

from __future__ import annotations

import io
import json
import random
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stallfree.conformance import check_workload
from stallfree.conformance.trace.enginecheck import check_engine_trace
from stallfree.conformance.trace.record import record_trace
from stallfree.conformance.trace.synthetic import decoding_trace
from stallfree.conformance.trace.tracecheck import check_trace
from stallfree.conformance.trace.tracefile import TraceError
from stallfree.faults import FAULTS
from stallfree.main import main
from stallfree.reference import Scheduler
from stallfree.spec import RULE_IDS, RuleViolation, Workload
from stallfree.testing.generate import Ranges, random_workload

SMALL = Ranges(max_budget=16, max_seqs=4, max_prompt=40, max_new=5, max_requests=6)
SMALL_LIFECYCLE = Ranges(max_budget=16, max_seqs=4, max_prompt=40, max_new=5, max_requests=6, stop_share=0.5,
                         cancel_share=0.3)
HEADER = '{"stallfree_trace": 1, "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64}}'


def trace_lines(workload: Workload, factory: object = Scheduler) -> list[bytes]:
    out = io.StringIO()
    record_trace(workload, factory, out)  # type: ignore[arg-type]
    return [line.encode() + b"\n" for line in out.getvalue().splitlines()]


def hand_lines() -> list[str]:
    return [
        HEADER,
        '{"step": 0, "add": [[0, 8, 6]], "plan": [[0, 8]], "emitted": [0], "finished": []}',
        '{"step": 1, "add": [[1, 20, 3]], "plan": [[0, 1], [1, 7]], "emitted": [0], "finished": []}',
        '{"step": 2, "plan": [[0, 1], [1, 7]], "emitted": [0], "finished": []}',
        '{"step": 3, "plan": [[0, 1], [1, 6]], "emitted": [0, 1], "finished": []}',
        '{"step": 4, "plan": [[0, 1], [1, 1]], "emitted": [0, 1], "finished": []}',
        '{"step": 5, "plan": [[0, 1], [1, 1]], "emitted": [0, 1], "finished": [0, 1]}',
        '{"end": true}',
    ]


# -- round trip ------------------------------------------------------------------------------------------------


def test_trace_jsonl_round_trips_through_check_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hand.jsonl"
    assert main(["trace", "--example", "hand", "--jsonl", str(path)]) == 0
    assert [json.loads(x) for x in path.read_text().splitlines()[1:]] == [json.loads(x) for x in hand_lines()[1:]]
    capsys.readouterr()
    assert main(["check-trace", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "6 steps, with its end line" in out and all(f"{r:<16} holds (6 steps)" in out for r in RULE_IDS)


@pytest.mark.parametrize("check", [check_trace, check_engine_trace], ids=["trace", "engine"])
@pytest.mark.parametrize("seed", range(20))
def test_reference_traces_hold_every_rule(seed: int, check: Callable[[list[bytes]], Any]) -> None:
    workload = random_workload(random.Random(seed), SMALL)
    verdict = check(trace_lines(workload))
    assert verdict.ok and verdict.ended, verdict
    assert verdict.steps == check_workload(workload, Scheduler).steps


# -- the trace judges as the live monitor does --------------------------------------------------------------


def live_violation(rule: str) -> tuple[Workload, RuleViolation, list[bytes]]:
    """A small workload on which FAULTS[rule] breaks `rule`, the live monitor's violation, and the trace
    of the whole run (a run the fault's own code survives once the rule is not checked)."""
    seeds = [(seed, SMALL) for seed in range(2000)] + [(seed, SMALL_LIFECYCLE) for seed in range(500)]
    for seed, ranges in seeds:  # stops and cancels (which CANCEL's fault needs) after the plain ones
        workload = random_workload(random.Random(seed), ranges)
        try:
            check_workload(workload, FAULTS[rule], [rule])
        except RuleViolation as violation:
            if violation.rule != rule:
                continue
            try:
                return workload, violation, trace_lines(workload, FAULTS[rule])
            except (KeyError, ValueError, RuleViolation):
                continue  # the wrong plan also breaks the fault's own bookkeeping: try another
        except KeyError:
            continue
    raise AssertionError(f"no workload shows {rule}")


@pytest.mark.parametrize("rule", [r for r in RULE_IDS if r != "KV"])  # KV: the trace's "finished", below
def test_a_faults_trace_breaks_its_rule_at_the_same_step(rule: str) -> None:
    _, live, lines = live_violation(rule)
    verdict = check_trace(lines, [rule])
    assert verdict.violation is not None and verdict.violation.rule == rule
    assert verdict.violation.step == live.step and verdict.violation_line == live.step + 2


def test_kv_returned_before_the_request_finished_is_a_kv_violation() -> None:
    lines = hand_lines()
    lines[5] = lines[5].replace('"finished": []', '"finished": [0]')  # step 4: r0 has 5 of its 6 tokens
    lines[6] = lines[6].replace('"finished": [0, 1]', '"finished": [1]')
    verdict = check_trace(lines)
    assert verdict.violation is not None and verdict.violation.rule == "KV" and verdict.violation_line == 6


def test_kv_never_returned_is_a_kv_violation() -> None:
    lines = hand_lines()
    lines[6] = lines[6].replace('"finished": [0, 1]', '"finished": [1]')
    verdict = check_trace(lines)
    assert verdict.violation is not None and verdict.violation.rule == "KV" and verdict.violation.step == 5


def test_an_end_line_with_work_pending_breaks_progress() -> None:
    lines = hand_lines()
    del lines[6]
    verdict = check_trace(lines)
    assert verdict.violation is not None and verdict.violation.rule == "PROGRESS"
    assert check_trace(lines[:-1]).ok  # without an end line, the engine may still be running


def test_all_finds_every_broken_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, lines = live_violation("BUDGET")
    path = tmp_path / "free_decodes.jsonl"
    path.write_bytes(b"".join(lines))
    assert main(["check-trace", str(path), "--quiet", "--all", "--json", str(tmp_path / "v.json")]) == 1
    rules = json.loads((tmp_path / "v.json").read_text())["rules"]
    assert rules["BUDGET"]["verdict"] == "broken" and rules["ONE-ENTRY"]["verdict"] == "holds"
    assert main(["check-trace", str(path), "--quiet", "--profile", "safety"]) == 1
    assert "FCFS             not checked" in capsys.readouterr().out


# -- malformed input -----------------------------------------------------------------------------------------


def step1(**fields: object) -> str:
    line = {"step": 1, "plan": [[0, 1]], "emitted": [0], "finished": []}
    line.update(fields)
    return json.dumps(line)


STEP0 = '{"step": 0, "add": [[0, 4, 3]], "plan": [[0, 4]], "emitted": [0], "finished": []}'
MALFORMED = [
    ([], 1, "the header line is missing"),
    (["not json"], 1, "not valid JSON"),
    (['{"config": {}}'], 1, '"stallfree_trace": 1'),
    (['{"stallfree_trace": 1, "config": {"token_budget": 8, "max_seqs": 4}}'], 1, "config lacks kv_tokens"),
    (['{"stallfree_trace": 1, "config": {"token_budget": 0, "max_seqs": 4, "kv_tokens": 9}}'], 1, "token_budget"),
    (['{"stallfree_trace": 1, "config": {"token_budget": -8, "max_seqs": 4, "kv_tokens": 9}}'], 1, "got -8"),
    ([HEADER, "{"], 2, "not valid JSON"),
    ([HEADER, ""], 2, "not valid JSON"),
    ([HEADER, "[1, 2]"], 2, "must be a JSON object"),
    ([HEADER, STEP0, '{"plan": []}'], 3, 'needs "step"'),
    ([HEADER, STEP0, step1(step=2)], 3, "step must be 1"),
    ([HEADER, STEP0, step1(plan=[["a", 1]])], 3, 'plan[0] rid must be an int in [0, 2**63-1], got "a"'),
    ([HEADER, STEP0, step1(plan=[[0, -1]])], 3, "plan[0] n must be an int in [0, 2**63-1], got -1"),
    ([HEADER, STEP0, step1(plan=[[0, 2**64]])], 3, "got 18446744073709551616"),
    ([HEADER, STEP0, step1(plan=[[0, True]])], 3, "got true"),
    ([HEADER, STEP0, step1(plan=[[0, 1.5]])], 3, "got 1.5"),
    ([HEADER, STEP0, step1(plan=[[0]])], 3, "plan[0] must be [rid, n]"),
    ([HEADER, STEP0, step1(plan={"0": 1})], 3, "plan must be a list"),
    ([HEADER, STEP0, step1(emitted=[None])], 3, "emitted[0] must be an int"),
    ([HEADER, STEP0, step1(finished=5)], 3, "finished must be a list"),
    ([HEADER, STEP0, step1(add=[[1, 2]])], 3, "add[0] must be [rid, prompt_len, max_new]"),
    ([HEADER, STEP0, step1(add=[[1, -2, 3]])], 3, "add[0] prompt_len must be an int"),
    ([HEADER, STEP0, step1(refuse=[[1, [2], 3]])], 3, "refuse[0] must be"),
    ([HEADER, STEP0, step1(extra=1)], 3, "unknown field(s) ['extra']"),
    ([HEADER, STEP0, '{"step": 1, "plan": [], "emitted": []}'], 3, "step 1 lacks finished"),
    ([HEADER, STEP0, '{"step": 1, "plan": [[0, ' + "9" * 5000 + "]]}"], 3, "not valid JSON"),
    ([HEADER, '{"end": true}', STEP0], 3, "nothing may follow the end line"),
]


@pytest.mark.parametrize(("lines", "number", "words"), MALFORMED)
def test_malformed_input_is_a_clear_error_with_its_line_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], number: int, words: str
) -> None:
    with pytest.raises(TraceError) as error:
        check_trace(line.encode() + b"\n" for line in lines)
    assert error.value.line == number and words in str(error.value)
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    assert main(["check-trace", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"line {number}: " in err and "Traceback" not in err


def test_bad_utf8_and_a_missing_file_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(HEADER.encode() + b"\n\xff\xfe\n")
    assert main(["check-trace", str(path), "--quiet"]) == 2
    assert main(["check-trace", str(tmp_path / "missing.jsonl"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "line 2: not valid JSON" in err and "No such file" in err


def test_an_unknown_rid_is_a_protocol_violation_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "unknown.jsonl"
    path.write_text(f"{HEADER}\n{STEP0}\n{step1(plan=[[7, 1]])}\n")
    assert main(["check-trace", str(path), "--quiet"]) == 1
    expected = "PROTOCOL         BROKEN at step 1 (line 3): plan names rid 7, which was never added"
    assert expected in capsys.readouterr().out


# -- fuzzing the parser ------------------------------------------------------------------------------------------

JUNK = st.one_of(
    st.integers(-(2**70), 2**70), st.booleans(), st.none(), st.floats(allow_nan=False), st.text(max_size=5),
    st.lists(st.integers(-3, 3), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@given(st.lists(st.one_of(st.binary(max_size=40), st.text(max_size=40).map(str.encode)), max_size=6))
def test_fuzz_arbitrary_bytes_never_crash_the_checker(lines: list[bytes]) -> None:
    # The property: junk either checks or raises TraceError naming a line of the input (header = 1);
    # any other exception fails the test, and so does a line number outside the input.
    try:
        check_trace([HEADER.encode(), *lines])
    except TraceError as error:
        assert 1 <= error.line <= len(lines) + 1  # deliberate: fails on a line number outside the input


def mutate(value: object, path: list[object], junk: object) -> object:
    if not path:
        return junk
    head, *rest = path
    if isinstance(value, dict):
        return {**value, head: mutate(value[head], rest, junk)}  # type: ignore[index]
    copy = list(value)  # type: ignore[call-overload]
    copy[head] = mutate(copy[head], rest, junk)  # type: ignore[index]
    return copy


def paths(value: object, prefix: list[object]) -> Iterator[list[object]]:
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, item in items:
        yield from paths(item, [*prefix, key])


@given(st.data())
def test_fuzz_a_value_replaced_by_junk_is_reported_on_its_own_line(data: st.DataObject) -> None:
    lines = [json.loads(line) for line in hand_lines()]
    index = data.draw(st.integers(0, len(lines) - 1))
    path = data.draw(st.sampled_from(list(paths(lines[index], []))))
    lines[index] = mutate(lines[index], path, data.draw(JUNK))
    try:
        check_trace(json.dumps(line).encode() for line in lines)
    except TraceError as error:
        assert error.line == index + 1, (error, lines[index])


# -- streaming -------------------------------------------------------------------------------------------------


def peak_bytes(num_steps: int) -> int:
    tracemalloc.start()
    try:
        verdict = check_trace(decoding_trace(num_steps))
        assert verdict.ok and verdict.ended and verdict.steps == num_steps
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_is_flat_in_trace_length() -> None:
    short, long = peak_bytes(1_000), peak_bytes(8_000)
    assert long < short * 1.5 + 20_000, (short, long)


SMALL_INT = st.integers(0, 6)


@st.composite
def arbitrary_engine_lines(draw: st.DrawFn) -> list[bytes]:
    """Well-formed lines of an engine that does anything at all: the checker must judge, never crash."""
    config = {"token_budget": draw(st.integers(1, 8)), "max_seqs": draw(st.integers(1, 3)),
              "kv_tokens": draw(st.integers(1, 30))}
    lines = [json.dumps({"stallfree_trace": 1, "config": config})]
    for step in range(draw(st.integers(0, 8))):
        line = {
            "step": step,
            "add": draw(st.lists(st.lists(SMALL_INT, min_size=3, max_size=3), max_size=2)),
            "refuse": draw(st.lists(st.lists(st.one_of(SMALL_INT, st.none(), st.text(max_size=2)), min_size=3,
                                             max_size=3), max_size=1)),
            "plan": draw(st.lists(st.lists(SMALL_INT, min_size=2, max_size=2), max_size=3)),
            "emitted": draw(st.lists(SMALL_INT, max_size=3)),
            "finished": draw(st.lists(SMALL_INT, max_size=2)),
        }
        lines.append(json.dumps(line))
    if draw(st.booleans()):
        lines.append('{"end": true}')
    return [line.encode() for line in lines]


@given(arbitrary_engine_lines(), st.sampled_from([None, ["BUDGET"], ["KV", "NEVER-FIT"], []]))
def test_fuzz_any_engine_behaviour_is_judged_never_a_crash(lines: list[bytes], rules: list[str] | None) -> None:
    verdict = check_trace(lines, rules)
    assert verdict.violation is None or verdict.violation_line is not None
