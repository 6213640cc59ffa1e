"""A step written before it runs (TraceWriterV2.provisional): replaced by the whole step once it ran, and,
when the engine dies while it runs, left as the trace's last line and judged."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from stallfree.conformance.trace.enginecheck import check_engine_trace
from stallfree.conformance.trace.tracefile import TraceError
from stallfree.conformance.trace.v2 import EngineConfig, EngineStep, TraceWriterV2

CONFIG = EngineConfig(token_budget=8, max_seqs=2, kv_tokens=64, block_size=16)


def step0() -> EngineStep:
    return EngineStep(0, [("a", 6)], ["a"], [], add=[("a", 6, 3)], admit=[("a", 0)])


def step1(emitted: list[str]) -> EngineStep:  # an overrun: 1 + 9 tokens against a budget of 8
    return EngineStep(1, [("a", 1), ("b", 9)], emitted, [], add=[("b", 9, 2)], admit=[("b", 0)])


def test_the_whole_step_replaces_its_provisional_line(tmp_path: Path) -> None:
    for out in (io.StringIO(), (tmp_path / "t.jsonl").open("w+")):
        writer = TraceWriterV2(out, CONFIG)
        writer.provisional(step0())
        writer.step(step0())
        writer.provisional(step1([]))
        writer.step(step1(["a", "b"]))
        writer.end()
        out.seek(0)
        lines = out.read().splitlines()
        assert len(lines) == 4 and '"step":1' in lines[2] and '"emitted":["a","b"]' in lines[2], lines
        assert '"ran"' not in "".join(lines)
        out.close()


def test_a_crash_while_a_step_runs_leaves_it_in_the_trace_judged(tmp_path: Path) -> None:
    path = tmp_path / "crashed.jsonl"
    with path.open("w") as out:
        writer = TraceWriterV2(out, CONFIG)
        writer.provisional(step0())
        writer.step(step0())
        writer.provisional(step1([]))
        # the engine dies in step 1's forward pass: nothing more is written
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and '"ran":false' in lines[2] and '"emitted":[]' in lines[2]
    verdict = check_engine_trace(lines)
    assert set(verdict.violations) == {"BUDGET"}, verdict.violations  # no token rule judged on a step never run
    assert verdict.violations["BUDGET"][0].step == 1 and verdict.unfinished_step == 1
    assert "step 1, which did not finish" in verdict.partial["FIRST-TOKEN"]


def test_a_step_that_did_not_finish_is_the_last_line_and_emitted_nothing() -> None:
    out = io.StringIO()
    writer = TraceWriterV2(out, CONFIG)
    writer.provisional(step0())
    lines = out.getvalue().splitlines()
    assert '"ran":false' in lines[1] and '"emitted":[]' in lines[1]
    with pytest.raises(TraceError, match="nothing may follow step 0, which did not finish"):
        check_engine_trace([*lines, '{"end": true}'])
    with pytest.raises(TraceError, match=r"did not finish \(ran: false\), yet emitted"):
        check_engine_trace([lines[0], lines[1].replace('"emitted":[]', '"emitted":["a"]')])
    with pytest.raises(TraceError, match="ran may only be false"):
        check_engine_trace([lines[0], lines[1].replace('"ran":false', '"ran":true')])



def test_without_the_provisional_line_the_fatal_step_is_lost(tmp_path: Path) -> None:
    # The negative control: writing a step only after it ran, a crash in step 1 leaves a trace that
    # holds BUDGET, as the overrun never reached it.
    out = io.StringIO()
    writer = TraceWriterV2(out, CONFIG)
    writer.step(step0())
    assert "BUDGET" not in check_engine_trace(out.getvalue().splitlines()).violations


class Pipe(io.StringIO):
    def seekable(self) -> bool:
        return False


def test_a_stream_that_cannot_seek_gets_each_step_once() -> None:
    out = Pipe()
    writer = TraceWriterV2(out, CONFIG)
    writer.provisional(step0())
    writer.step(step0())
    assert len(out.getvalue().splitlines()) == 2
