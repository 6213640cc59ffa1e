"""Hidden state: `stallfree prove --scheduler X` merges states by the checker's key, which is sound
only if X decides on nothing the key leaves out. X's hidden state must be declared (`--hidden`) or
the model-check claims are refused; a known state reached again is stepped again and compared, so
the PROGRESS negative control (a stall every fourth step, by its own counter) fails through the
documented command even undeclared."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.modelcheck import HIDDEN, check
from stallfree.reference import Scheduler
from stallfree.spec import Config
from stallfree.spec.types import Plan

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


class EveryOtherAdmits(Scheduler):
    """Admits new requests only on every other schedule() call, by a counter the key leaves out:
    two states with one key then step to different keys (it breaks WORK-CONSERVING, left unjudged)."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.calls = 0

    def schedule(self) -> Plan:
        self.calls += 1
        if self.calls % 2:
            return super().schedule()
        config = self.config
        self.config = Config(config.token_budget, max(1, len(self.running)), config.kv_tokens)
        try:
            return super().schedule()
        finally:
            self.config = config


JUDGED = ("TOKENS", "KV", "FCFS")  # not WORK-CONSERVING, which would name the skipped admission first


@pytest.mark.parametrize("workers", [1, 2])
def test_HIDDEN_STATE_a_revisited_key_that_steps_elsewhere_is_reported(workers: int) -> None:
    bounds = Bounds.parse("2,3,8,3,3,3")
    found = check(bounds, EveryOtherAdmits, rules=JUDGED, compact=True, workers=workers).counterexample
    assert found is not None and found.rule == HIDDEN, found
    assert "step differently" in found.message and "declare it as hidden state" in found.message
    declared = check(bounds, EveryOtherAdmits, hidden=lambda s: s.calls % 2, rules=JUDGED, compact=True,
                     workers=workers)
    assert declared.holds, declared.counterexample


PAGED_PEER = '''
from stallfree.paged import Scheduler


def peer(token_budget, max_seqs, kv_tokens):
    """The paged scheduler under another name: a scheduler of the paged design that is not the project's."""
    return Scheduler(token_budget, max_seqs, kv_tokens, block_size=2, watermark=0)


peer.design = "paged"


SEEN = []


def counted(scheduler):
    """No hidden state, declared; each call is counted in a file beside this module (the model check
    runs in prove's child process), so a test sees the declaration reach the check."""
    with open(__file__ + ".seen", "a") as seen:
        seen.write("x")
    return None
'''


def test_a_paged_design_scheduler_declares_its_hidden_state_or_its_claims_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "paged_peer.py").write_text(PAGED_PEER)
    monkeypatch.syspath_prepend(str(tmp_path))
    bound = ["--methods", "model", "--bound", "2,2,6,2,3,3"]
    quick = ["prove", *bound, "--scheduler", "paged_peer:peer"]
    assert main(quick) == 1
    out = capsys.readouterr().out
    assert "refused" in out and "ALL PAGED RULES" in out and "holds" not in out.split("\n\n")[0]
    for declared in ("none", "paged_peer:counted"):
        assert main([*quick, "--hidden", declared]) == 0
        assert "ALL PAGED RULES" in capsys.readouterr().out
    assert len((tmp_path / "paged_peer.py.seen").read_text()) > 100  # the declared function entered every state's key
    assert main(["prove", *bound, "--scheduler", "paged"]) == 0  # the project's own
    assert main([*quick, "--hidden", "paged_peer:missing"]) == 2
    assert "--hidden" in capsys.readouterr().err
