"""`simulate --scheduler paged --max-new-cap N` caps every output at N (the paged design's run went
through the registry's contract and once ignored the cap); a distribution of caps is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stallfree.main import main

PAGED = ["simulate", "--scheduler", "paged", "--trace", "conv", "--limit", "60", "--quiet"]


def output_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, int]:
    out = tmp_path / f"run{len(more)}.json"
    assert main([*PAGED, *more, "--json", str(out)]) == 0
    assert "memory (paged)" in capsys.readouterr().out
    data = json.loads(out.read_text())
    return data["output_tokens"], data["finished"]


def test_the_paged_design_honours_one_max_new_cap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uncapped, _ = output_tokens(tmp_path, capsys)
    capped, finished_capped = output_tokens(tmp_path, capsys, "--max-new-cap", "4")
    assert capped <= 4 * finished_capped < uncapped  # every output stopped at the cap, and some were longer


def test_a_distribution_of_caps_is_refused_for_the_paged_design(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*PAGED, "--max-new-cap", "4,8"]) == 2
    assert "--max-new-cap 4,8: the paged design takes one cap N" in capsys.readouterr().err
