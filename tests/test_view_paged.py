"""The paged design's step view (stallfree.view.paged): every request's cell is what the paged monitor's
facts say it did (a decode, a chunk, an admission, a recompute, preempted, waiting), the tokens by kind
add up to the step's, the blocks in use are the pool less the free blocks the table prints, and
`trace --plot/--html` draw it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.paged import small_blocks
from stallfree.spec import Arrival, Config, Workload, play, registry
from stallfree.view.paged import KINDS, PREEMPTED, RECOMPUTE, WAITING_LINE, PagedRecorder, paged_data

WORKLOAD = Workload(Config(4, 4, 12), (Arrival(0, 3, 8, 0), Arrival(1, 3, 8, 0), Arrival(2, 2, 2, 1)))
ARGV = ["trace", "--scheduler", "stallfree.paged:small_blocks", "--request", "0:3:8", "--request", "1:3:8",
        "--request", "2:2:2@1", "--budget", "4", "--kv", "12"]


def recorded() -> PagedRecorder:
    recorder = PagedRecorder(WORKLOAD, "stallfree.paged:small_blocks")
    play(WORKLOAD, small_blocks, on_step=recorder.on_step, on_add=recorder.on_add, contract=registry.PAGED)  # type: ignore[arg-type]
    return recorder


def test_the_cells_are_the_facts() -> None:
    recorder = recorded()
    grid = recorder.grid()
    preempted = {(v.step, rid) for v in recorder.steps for rid in v.preempted}
    assert preempted == {(3, 2), (4, 1), (6, 1)}  # as the step table prints them
    assert {(i, rid) for rid, row in grid.items() for i, k in enumerate(row) if k == PREEMPTED} == preempted
    recomputed = {(i, rid) for rid, row in grid.items() for i, k in enumerate(row) if k == RECOMPUTE}
    assert recomputed == {(v.step, e.rid) for v in recorder.steps for e in v.entries if e.kind == RECOMPUTE}
    assert recomputed == {(5, 1), (8, 1), (9, 1), (9, 2), (10, 2)}
    assert grid[2][4:9] == [WAITING_LINE] * 5  # back at the head, waiting for blocks
    assert grid[0][0] == "admission" and grid[0][8:] == ["finished"] * 6


def test_tokens_by_kind_and_blocks_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    recorder = recorded()
    for view in recorder.steps:
        assert sum(view.tokens(k) for k in KINDS) == view.num_tokens <= 4
    assert main(ARGV) == 0
    free = [int(line.split()[-1]) for line in capsys.readouterr().out.splitlines() if re.match(r"^ +\d+  r", line)]
    assert [recorder.num_blocks - f for f in free] == [v.blocks_in_use for v in recorder.steps]


def test_a_run_without_preemption_draws_none() -> None:
    """The control: with room for all three (K = 32), no cell is preempted or recomputed."""
    roomy = Workload(Config(4, 4, 32), WORKLOAD.requests)
    recorder = PagedRecorder(roomy, "small_blocks")
    play(roomy, small_blocks, on_step=recorder.on_step, on_add=recorder.on_add, contract=registry.PAGED)  # type: ignore[arg-type]
    kinds = {k for row in recorder.grid().values() for k in row}
    assert PREEMPTED not in kinds and RECOMPUTE not in kinds


def test_trace_draws_the_paged_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from matplotlib.image import imread

    png, page = tmp_path / "paged.png", tmp_path / "paged.html"
    assert main([*ARGV, "--plot", str(png), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert f"plot: {png}" in out and f"html: {page}" in out
    assert imread(str(png)).shape[0] > 400
    text = page.read_text()
    payload = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', text, re.S).group(1))
    assert payload == json.loads(json.dumps(paged_data(recorded())))  # the page draws the recorder's data
    assert payload["kinds"] == list(KINDS) and payload["steps"][5]["tokens"][RECOMPUTE] == 3
    assert "KV blocks in use" in text


def test_the_paged_table_keeps_its_columns_when_a_plan_is_long(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ARGV) == 0
    out = capsys.readouterr().out.splitlines()
    header = next(line for line in out if line.startswith(" step  entries"))
    end = header.index("tokens") + len("tokens")
    (nine,) = [line for line in out if line.startswith("    9  ")]
    assert nine[:end].endswith("4/4") and nine.split()[-1] == "2"  # tokens and free blocks in their columns
    assert out[out.index(nine) + 1] == "       r2 chunk 0-2 (admitted) (recompute)"
