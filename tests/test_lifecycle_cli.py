"""The commands with stops and cancels: `stallfree trace` plays a workload's stops and cancels and
writes them to its JSON Lines trace, which `check-trace` judges clean; `campaign --lifecycle` runs
workloads with both; a scheduler without cancel() or the stopped argument is told so, no traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stallfree.main import main

WORKLOAD = {
    "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64},
    "requests": [{"rid": 0, "prompt_len": 4, "max_new": 6, "stop_after": 2}, {"rid": 1, "prompt_len": 3, "max_new": 6},
                 {"rid": 2, "prompt_len": 5, "max_new": 2, "arrival_step": 2}],
    "cancels": [{"rid": 1, "step": 3}, {"rid": 7, "step": 1}],
}


def test_trace_plays_stops_and_cancels_and_check_trace_judges_its_jsonl(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload, jsonl = tmp_path / "w.json", tmp_path / "w.jsonl"
    workload.write_text(json.dumps(WORKLOAD))
    assert main(["trace", "--workload", str(workload), "--jsonl", str(jsonl)]) == 0
    out = capsys.readouterr().out
    assert "stopped: r0" in out and "cancel(1) at step 3, before it: accepted" in out
    assert "cancel(7) at step 1, before it: refused" in out and "CANCEL           holds (4 steps)" in out
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert lines[2]["stop"] == [0] and lines[2]["finished"] == [0] and lines[4]["cancel"] == [1]
    assert main(["check-trace", str(jsonl), "--quiet"]) == 0


def test_campaign_lifecycle_runs_stops_and_cancels(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["campaign", "--sims", "40", "--jobs", "1", "--lifecycle", "--quiet"]) == 0
    out = capsys.readouterr().out
    found = re.search(r"stops, cancels +([\d,]+) stops, ([\d,]+) cancel\(\) calls", out)
    assert found is not None, out
    stops, cancels = (int(x.replace(",", "")) for x in found.groups())
    assert stops > 0 and cancels > 0 and "no rule broken" in out


def test_a_scheduler_without_the_capabilities_is_told_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(WORKLOAD))
    assert main(["trace", "--workload", str(workload), "--scheduler", "stallfree.testing.plain:Plain"]) == 2
    err = capsys.readouterr().err
    assert "Plain does not support 'stop': its complete() takes no second argument (stopped)" in err
    assert "Traceback" not in err
