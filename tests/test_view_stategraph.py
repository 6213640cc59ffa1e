"""The drawn state graph is the model checker's: the same states as `stallfree prove` counts, the
counterexample path ending where the fault breaks its rule, and a picture of each."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallfree.faults import FAULTS
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.modelcheck import check
from stallfree.spec import RuleViolation, play
from stallfree.view.stategraph import explore, levels, main

BOUND = Bounds(2, 2, 4, 2, 1, 2, never_fit=False)


def test_reference_graph_is_the_model_checks() -> None:
    sg = explore(BOUND)
    result = check(BOUND)
    assert sg.complete and sg.counterexample is None and result.holds
    assert sg.num_states == result.states == 15
    assert set(levels(sg)) == set(range(sg.num_states))  # every state reached from the initial one
    assert sg.label(0) == "idle" and any("r 1+2 1/2" in sg.label(s) for s in range(sg.num_states))


def test_counterexample_path_leads_to_the_broken_rule() -> None:
    sg = explore(BOUND, FAULTS["WORK-CONSERVING"])
    assert sg.counterexample is not None and sg.counterexample.rule == "WORK-CONSERVING"
    assert [sg.label(s) for s in sg.path] == ["idle", "w 1+1", "w 1+1\nw 1+1"]
    with pytest.raises(RuleViolation) as broken:  # its workload replays to the same break
        play(sg.counterexample.workload, FAULTS["WORK-CONSERVING"])
    assert broken.value.rule == "WORK-CONSERVING"


def test_the_command_draws_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    assert main(["2,2,4,2,1,2", str(tmp_path / "ok.png")]) == 0
    assert main(["2,2,4,2,1,2", str(tmp_path / "bad.png"), "--scheduler", "stallfree.faults.catalog:SkipAhead",
                 "--never-fit"]) == 0
    out = capsys.readouterr().out
    assert "15 states; every transition judged by the monitor" in out
    assert (tmp_path / "ok.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "bad.png").stat().st_size > 1000
