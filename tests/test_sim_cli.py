"""`stallfree simulate`: a short run end to end, JSON and plots, and its exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from stallfree.main import main

SHORT = ["simulate", "--trace", "conv", "--limit", "120", "--quiet"]


def test_simulate_reports_percentiles_and_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "run.json"
    assert main([*SHORT, "--budget", "1024", "--json", str(out_json), "--check"]) == 0
    out = capsys.readouterr().out
    for heading in ("time to first token", "time per output token", "worst gap", "end-to-end", "queueing",
                    "throughput", "budget use per step", "rules: all held"):
        assert heading in out
    data = json.loads(out_json.read_text())
    assert data["config"]["token_budget"] == 1024
    assert data["requests"] == 120 and data["finished"] == 120 and data["skipped"] == []
    assert set(data["latency_s"]["ttft"]) == {"count", "mean", "p50", "p90", "p99", "max"}


def test_simulate_lists_never_fit_requests(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--trace", "code", "--limit", "40", "--kv", "5000", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "skipped rid 3: NEVER-FIT: prompt_len + max_new = 7433 + 14 = 7447 exceeds kv_tokens=5000" in out


def test_simulate_progress_goes_to_stderr(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["simulate", "--trace", "code", "--limit", "30"]) == 0
    assert "30/30 requests" not in capsys.readouterr().err  # stderr is not a terminal: no progress lines
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["simulate", "--trace", "code", "--limit", "30"]) == 0
    captured = capsys.readouterr()
    assert "30/30 requests" in captured.err
    assert "requests" not in captured.err.split("\n")[-1] or captured.err.endswith("\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--trace", "nowhere.csv"], "'nowhere.csv' is neither code nor conv nor a file"),
        (["--scheduler", "nomodule"], "expected MODULE:FACTORY"),
        (["--gpu", "a100-80gb"], "A100 80GB SXM has no dense fp8"),
        (["--kv", "10", "--tp", "3"], "tp 3 does not divide"),
    ],
)
def test_bad_arguments_exit_2_naming_the_value(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*SHORT, *argv]) == 2
    assert message in capsys.readouterr().err


def test_bad_rate_scale_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*SHORT, "--rate-scale", "-2"])
    assert exit_.value.code == 2
    assert "expected a positive number <= 1e+06, got -2" in capsys.readouterr().err


def test_check_on_a_variant_exits_1_naming_the_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SHORT, "--scheduler", "prefill-first", "--check"]) == 1
    assert "broke DECODE-FIRST" in capsys.readouterr().err


def test_any_plain_protocol_scheduler_by_module(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SHORT, "--scheduler", "stallfree.variants:Stepwise"]) == 0
    assert "policy stallfree.variants:Stepwise" in capsys.readouterr().out
