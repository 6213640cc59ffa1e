"""The paged design on the command line: trace, conform --profile paged, prove --scheduler paged,
each shown passing on the paged scheduler and failing, with the rule named, on a paged fault."""

from __future__ import annotations

import re

import pytest

from stallfree.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


PREEMPTING = ["--request", "0:3:8", "--request", "1:3:8", "--request", "2:2:2@1", "--budget", "4", "--kv", "32"]


def test_trace_paged_shows_blocks_and_preemptions_and_every_paged_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["trace", "--scheduler", "stallfree.paged:small_blocks", *PREEMPTING, "--kv", "12"], capsys)
    assert code == 0, out
    assert "free blk" in out and "preempted: r" in out
    assert "PREEMPT-ORDER    holds" in out and "BLOCKS           holds" in out
    assert "CANCEL           not judged (no cancel in a workload)" in out  # never printed as holding
    assert "KV " not in out  # the reservation design's rule is not the paged design's


def test_trace_paged_fault_is_broken_with_its_rule(capsys: pytest.CaptureFixture[str]) -> None:
    fault = "stallfree.faults.paged:PreemptOldest"
    code, out, _ = run(["trace", "--scheduler", fault, *PREEMPTING, "--kv", "12"], capsys)
    assert code == 1
    assert "PREEMPT-BOUND    BROKEN" in out


def test_trace_paged_refuses_jsonl_and_unknown_rules(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run(["trace", "--scheduler", "paged", *PREEMPTING, "--jsonl", str(tmp_path / "t.jsonl")], capsys)
    assert code == 2 and "no preemption events" in err
    code, _, err = run(["trace", "--scheduler", "paged", *PREEMPTING, "--rules", "KV"], capsys)
    assert code == 2 and "unknown paged rule ID(s) ['KV']" in err


def test_conform_profile_paged_passes_the_paged_scheduler_and_fails_a_fault(capsys: pytest.CaptureFixture[str]) -> None:
    fast = ["--profile", "paged", "--examples", "3", "--quiet"]
    code, out, _ = run(["conform", "stallfree.paged:small_blocks", *fast], capsys)
    assert code == 0, out
    assert "CANCEL           holds" in out and "BLOCKS           holds" in out
    code, out, _ = run(["conform", "stallfree.faults.paged:IgnoreWatermark", *fast], capsys)
    assert code == 1
    assert "WATERMARK        BROKEN" in out


def test_prove_scheduler_paged_holds_and_its_fault_breaks(capsys: pytest.CaptureFixture[str]) -> None:
    methods = "model,z3,differential"
    code, out, _ = run(["prove", "--scheduler", "paged", "--bound", "2,2,6,2,3,3", "--methods", methods],
                       capsys)
    assert code == 0, out
    assert "ALL PAGED RULES" in out and "LONE-BLOCK" in out and "Z3 PAGED STEP = small_blocks" in out
    assert "TERMINATION" in out and "Z3 paged step (paged)" in out  # the step theorems, with the arithmetic
    assert "17 of 17 claims hold" in out
    code, out, _ = run(["prove", "--scheduler", "paged", "--fault", "RECOMPUTE", "--methods", "model"], capsys)
    assert code == 1
    assert "RECOMPUTE" in out and "BROKEN" in out
    code, _, err = run(["prove", "--scheduler", "paged", "--fault", "KV"], capsys)
    assert code == 2 and "no paged fault breaks KV" in err


def test_prove_scheduler_paged_requests_sets_the_paged_step_N(capsys: pytest.CaptureFixture[str]) -> None:
    """--requests N is the paged step theorems' N too (default `paged_step.PAGED_N`), printed in the row."""
    pytest.importorskip("z3")
    code, out, _ = run(["prove", "--scheduler", "paged", "--fault", "PREEMPT-BOUND", "--methods", "z3",
                        "--requests", "2"], capsys)
    assert code == 1, out
    rows = [line for line in out.splitlines() if re.match(r"\S+ +Z3 paged step \(PreemptOldest\) ", line)]
    assert len(rows) == 2 and all(re.search(r" N=2 +BROKEN ", r) for r in rows), out


@pytest.mark.parametrize(("name", "model_row", "z3_row"), [
    ("StopIgnored", "TOKENS-KEPT          model check (paged)", "END                  Z3 paged step (StopIgnored)"),
    ("LeakOnCancel", "BLOCKS               model check (paged)", "CANCEL               Z3 paged step (LeakOnCancel)"),
    ("EarlyToken", "TOKENS-KEPT          model check (paged)", "STOP-READY           Z3 paged step (EarlyToken)"),
])
def test_prove_scheduler_paged_selects_an_end_fault_by_name(name: str, model_row: str, z3_row: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The faults of stops and cancels share their rule with another fault, so --fault takes their name."""
    pytest.importorskip("z3")
    code, out, _ = run(["prove", "--scheduler", "paged", "--fault", name, "--methods", "model,z3"], capsys)
    assert code == 1, out
    for row in (model_row, z3_row):
        assert row in out and "BROKEN" in out.split(row, 1)[1].split("\n", 1)[0], out
    assert re.search(r"^0 of \d+ claims hold", out, re.MULTILINE), out  # no row of a fault's run holds


def test_campaign_over_the_paged_scheduler_and_a_paged_fault(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["campaign", "--sims", "20", "--jobs", "1", "--quiet",
                        "--scheduler", "stallfree.paged:small_blocks"], capsys)
    assert code == 0 and "no rule broken" in out
    code, out, _ = run(["campaign", "--sims", "40", "--jobs", "1", "--quiet",
                        "--scheduler", "stallfree.faults.paged:PreemptOldest"], capsys)
    assert code == 1 and "PREEMPT-BOUND broken" in out


def test_simulate_scheduler_paged_reports_the_memory_design(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["simulate", "--scheduler", "paged", "--trace", "code", "--limit", "300", "--quiet"], capsys)
    assert code == 0, out
    assert "policy paged" in out and "memory (paged)" in out and "preemptions:" in out
    code, _, err = run(["simulate", "--scheduler", "paged", "--trace", "code", "--limit", "10", "--check"], capsys)
    assert code == 2 and "conform --profile paged" in err


def test_the_python_example_of_docs_paged_runs() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "paged.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(block, "docs/paged.md", "exec"), {})


def test_prove_a_paged_model_check_where_nothing_runs_is_not_called_holding(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["prove", "--scheduler", "stallfree.faults.paged:small", "--bound", "1,1,1,1,1,1",
                        "--methods", "model"], capsys)
    assert code == 1  # undecided: a check that saw no request run decided nothing
    assert "unknown" in out and "vacuous: no request ever ran" in out and "0 of 1 claims hold" in out


def test_prove_scheduler_paged_runs_every_method_unless_told() -> None:
    import argparse

    from stallfree.commands.prove import PAGED_METHODS, paged_methods

    assert paged_methods(argparse.Namespace(methods=None)) == PAGED_METHODS
    assert paged_methods(argparse.Namespace(methods="z3")) == ("z3",)
    with pytest.raises(ValueError, match="expected some of"):
        paged_methods(argparse.Namespace(methods="nope"))


def test_trace_paged_writes_its_verdicts_as_json_and_refuses_the_views(capsys: pytest.CaptureFixture[str],
                                                                       tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    out_file = tmp_path / "verdicts.json"
    code, _, _ = run(["trace", "--scheduler", "paged", *PREEMPTING, "--json", str(out_file)], capsys)
    assert code == 0
    data = json.loads(out_file.read_text())
    assert data["design"] == "paged" and data["rules"]["BLOCKS"]["verdict"] == "holds"
    code, _, err = run(["trace", "--scheduler", "paged", *PREEMPTING, "--ms"], capsys)
    assert code == 2 and "--ms" in err and "paged trace" in err
