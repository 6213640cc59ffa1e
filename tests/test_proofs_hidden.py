"""Hidden state: `stallfree prove --scheduler X` merges states by the checker's key, which is sound
only if X decides on nothing the key leaves out. X's hidden state must be declared (`--hidden`) or
the model-check claims are refused; a known state reached again is stepped again and compared, so
the PROGRESS negative control (a stall every fourth step, by its own counter) fails through the
documented command even undeclared."""

from __future__ import annotations

import pytest

from stallfree.main import main

QUICK = ["--methods", "model", "--bound", "2,3,8,3,3,3", "--liveness-bound", "2,2,6,2,2,2"]


def test_the_stalling_control_fails_through_prove_scheduler(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", *QUICK, "--scheduler", "stallfree.faults.catalog:PeriodicStall"]) == 1
    out = capsys.readouterr().out
    assert "PROGRESS" in out and "BROKEN" in out and "empty plan" in out


def test_undeclared_hidden_state_refuses_the_claims(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", *QUICK, "--scheduler", "stallfree.reference:Scheduler"]) == 1
    out = capsys.readouterr().out
    assert "unknown" in out and "refused" in out and "holds" not in out.split("\n\n")[0]
    assert main(["prove", *QUICK, "--scheduler", "stallfree.reference:Scheduler", "--hidden", "none"]) == 0


def test_hidden_needs_a_scheduler(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", *QUICK, "--hidden", "none"]) == 2
    assert "--hidden" in capsys.readouterr().err


@pytest.mark.parametrize("invariant", ["ONE-PARTIAL", "READY-WITHIN-BUDGET"])
def test_prove_fault_catches_each_derived_invariant(invariant: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--fault", invariant, "--methods", "model", "--liveness-bound", "2,2,6,2,2,2"]) == 1
    out = capsys.readouterr().out
    assert invariant in out and "BROKEN" in out
