"""The variants on the command line: trace examples judged under their contracts, conform profiles,
simulate with a budget schedule and a priority mix; bad pairings are argument errors, not tracebacks."""

from __future__ import annotations

import pytest

from stallfree.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("scheduler, example", [
    ("aligned-16", "aligned"), ("rotating", "budget-drop"), ("resizable", "budget-drop"),
    ("aging-4", "priority-stream"),
])
def test_trace_variant_examples_hold_under_their_contracts(scheduler: str, example: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["trace", "--scheduler", scheduler, "--example", example], capsys)
    assert code == 0 and "BROKEN" not in out and "holds" in out


def test_trace_DECODE_FAIR_broken_by_oldest_first_after_the_drop(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["trace", "--scheduler", "resizable", "--contract", "rotation", "--example", "budget-drop"], capsys)
    assert code == 1 and "DECODE-FAIR      BROKEN at step 3" in out


def test_trace_AGING_BOUND_broken_by_strict_priority(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["trace", "--scheduler", "no-aging", "--contract", "aging-4", "--example", "priority-stream",
            "--rules", "AGING-BOUND"]
    code, out = run(argv, capsys)
    assert code == 1 and "AGING-BOUND      BROKEN at step 20" in out


def test_trace_budget_at_and_priority_requests(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["trace", "--scheduler", "rotating", "--request", "0:1:6", "--request", "1:1:6", "--request", "2:1:6",
            "--budget", "4", "--budget-at", "2:1", "--budget-at", "3:0"]
    code, out = run(argv, capsys)
    assert code == 0 and "BUDGET-CHANGE    holds" in out
    code, out = run(["trace", "--scheduler", "aging-4", "--request", "0:4:2@0/3", "--request", "1:4:2@0/9"], capsys)
    assert code == 0 and "refused: add(1, 4, 2)" in out


def test_conform_aligned_profile_passes_and_catches_its_fault(capsys: pytest.CaptureFixture[str]) -> None:
    quick = ["--profile", "aligned", "--examples", "3", "--max-seqs", "2", "--quiet"]
    code, out = run(["conform", "stallfree.variants.aligned:Aligned", *quick], capsys)
    assert code == 0 and "ALIGNED          holds" in out
    code, out = run(["conform", "stallfree.faults.aligned:UnalignedFirstChunk", *quick], capsys)
    assert code == 1 and "ALIGNED          BROKEN" in out and "--contract aligned-16" in out


def test_conform_bad_variant_profile_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["conform", "stallfree.variants.aligned:Aligned", "--profile", "aligned-0"], capsys)
    assert code == 2 and "aligned-N needs an int N >= 1" in out
    code, out = run(["conform", "stallfree.variants.aligned:Aligned", "--profile", "aligned", "--budget", "8"], capsys)
    assert code == 2 and "below 16" in out


def test_simulate_variant_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["simulate", "--scheduler", "rotating", "--limit", "300", "--budget-at", "5:16", "--check",
                     "--quiet"], capsys)
    assert code == 0 and "rules: all held on every step" in out
    code, out = run(["simulate", "--scheduler", "aging-4", "--limit", "300", "--max-new-cap", "64", "--check",
                     "--quiet"], capsys)  # the cap model stops each request at its real length: a variant takes it
    assert code == 0 and "rules: all held on every step" in out
    code, out = run(["simulate", "--limit", "10", "--quiet", "--budget-at", "1:3"], capsys)
    assert code == 2 and "has no set_budget()" in out
    code, out = run(["simulate", "--limit", "10", "--quiet", "--priority-mix", "100"], capsys)
    assert code == 2 and "takes no priority" in out


def test_check_trace_reads_budget_changes_and_priorities(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    rotating, oldest = tmp_path / "rotating.jsonl", tmp_path / "oldest.jsonl"
    run(["trace", "--scheduler", "rotating", "--example", "budget-drop", "--jsonl", str(rotating)], capsys)
    run(["trace", "--scheduler", "resizable", "--example", "budget-drop", "--jsonl", str(oldest)], capsys)
    assert '"budget":2' in rotating.read_text()
    code, out = run(["check-trace", str(rotating), "--profile", "rotation", "--quiet"], capsys)
    assert code == 0 and "DECODE-FAIR      holds" in out
    code, out = run(["check-trace", str(oldest), "--profile", "rotation", "--quiet"], capsys)
    assert code == 1 and "DECODE-FAIR      BROKEN at step 3" in out
    code, out = run(["check-trace", str(oldest), "--quiet"], capsys)
    assert code == 2 and '"budget" needs a budget-change contract' in out
    aged = tmp_path / "aged.jsonl"
    run(["trace", "--scheduler", "aging-4", "--example", "priority-stream", "--jsonl", str(aged)], capsys)
    code, out = run(["check-trace", str(aged), "--profile", "aging-4", "--quiet"], capsys)
    assert code == 0 and "AGING-BOUND      holds" in out
    code, out = run(["check-trace", str(aged), "--quiet"], capsys)
    assert code == 2 and "needs a priority contract" in out
