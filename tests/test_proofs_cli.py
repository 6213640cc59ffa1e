"""`stallfree prove`: the table, exit 0 when every claim holds, 1 with a counterexample on a negative
control, 2 on a bad argument; --json writes the rows."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from stallfree.main import main

QUICK = ["--requests", "3", "--methods", "model,z3", "--bound", "2,2,6,2,2,2", "--liveness-bound", "2,2,6,2,2,2"]


def test_prove_holds_on_the_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # progress lines only on a terminal
    out_file = tmp_path / "rows.json"
    assert main(["prove", *QUICK, "--json", str(out_file)]) == 0
    out = capsys.readouterr()
    assert "ALL RULES" in out.out and "BUDGET (any N)" in out.out and "claims hold" in out.out
    assert "z3: BUDGET" in out.err  # progress goes to stderr
    rows = json.loads(out_file.read_text())
    judged = [r for r in rows if r["method"] != "model check (vacuous here)"]  # 2,2,6,2,2,2 reaches few cases
    assert {r["result"] for r in judged} == {"holds"} and {r["claim"] for r in rows} >= {"PROGRESS", "KV"}
    assert {r["result"] for r in rows if r not in judged} == {"not judged"}


def test_prove_fails_on_a_negative_control_with_a_counterexample(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--fault", "fcfs", "--requests", "3", "--methods", "model,z3",
                 "--liveness-bound", "2,2,6,2,2,2"]) == 1
    out = capsys.readouterr().out
    assert "FCFS" in out and "BROKEN" in out and '"requests": [{"rid": 0' in out  # the workload


def test_prove_fault_runs_crosshair_on_that_rules_planted_bug(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--fault", "slots", "--methods", "crosshair"]) == 1
    out = capsys.readouterr().out
    assert "SLOTS" in out and "PlantedSlots" in out and "BROKEN" in out and "PlantedKV" not in out
    assert main(["prove", "--fault", "one-partial", "--methods", "crosshair"]) == 0  # no failure claimed
    assert "n/a (no contract for ONE-PARTIAL)" in capsys.readouterr().out


@pytest.mark.parametrize("argv, field", [
    (["--bound", "1,2,3"], "bound"),
    (["--fault", "NOPE"], "NOPE"),
    (["--methods", "tlc"], "--methods"),
    (["--requests", "0"], "--requests"),
])
def test_prove_rejects_bad_arguments(argv: list[str], field: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        status = main(["prove", *argv])
    except SystemExit as exit_:  # refused by the argument's type, as argparse does
        status = exit_.code
    assert status == 2
    assert field in capsys.readouterr().err


@pytest.mark.deep
def test_prove_default_run_holds(capsys: pytest.CaptureFixture[str]) -> None:
    """The default run, as a user types it: every claim at its published bound."""
    assert main(["prove"]) == 0
    assert "BROKEN" not in capsys.readouterr().out
