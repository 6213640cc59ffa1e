"""The step view draws the prefix-caching design (`stallfree.prefix`): an admission that holds cached
prompt tokens (the plan's `cached` claim, as the prefix monitor reads it) is drawn as a "cached" cell,
in the PNG and on the HTML page, at exactly the hits the step table prints, and nowhere in a run that
hits nothing (the same workload with its shared content taken out, under the prefix or the paged design)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.prefix import small_blocks
from stallfree.spec import Workload, play, registry
from stallfree.view.paged import CACHED, PAGED_CATEGORIES, PagedRecorder

HITS = Path(__file__).resolve().parents[1] / "docs" / "examples" / "prefix-hits.json"
HIT = re.compile(r"^\s+hit: r(\d+) holds (\d+) cached token\(s\)")
CACHED_COLOUR = next(c.colour for c in PAGED_CATEGORIES if c.key == CACHED)


def no_hits(tmp_path: Path) -> Path:
    """The same requests with no shared content: nothing to hit."""
    data = json.loads(HITS.read_text())
    for request in data["requests"]:
        request.pop("content", None)
    path = tmp_path / "no-hits.json"
    path.write_text(json.dumps(data))
    return path


def traced(workload: Path, scheduler: str, tmp_path: Path,
           capsys: pytest.CaptureFixture[str]) -> tuple[list[str], dict, Path]:
    png, html = tmp_path / f"{workload.stem}.png", tmp_path / f"{workload.stem}.html"
    code = main(["trace", "--scheduler", scheduler, "--workload", str(workload), "--plot", str(png), "--html",
                 str(html)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, "\n".join(out)
    page = html.read_text()
    data = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S).group(1))
    return out, data, png


def printed_hits(out: list[str]) -> dict[tuple[int, int], int]:
    """(step, rid) -> cached tokens, from the step table's `hit:` lines under each step's row."""
    hits, step = {}, -1
    for line in out:
        if re.match(r"^\s*\d+  ", line):
            step = int(line.split()[0])
        m = HIT.match(line)
        if m:
            hits[(step, int(m.group(1)))] = int(m.group(2))
    return hits


def cells(data: dict, key: str) -> set[tuple[int, int]]:
    return {(i, int(rid)) for rid, row in data["grid"].items() for i, k in enumerate(row) if k == key}


def has_colour(png: Path, colour: str) -> bool:
    import matplotlib.image

    pixels = matplotlib.image.imread(str(png))[..., :3]
    want = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    return bool((abs(pixels - want) < 1.5 / 255).all(axis=-1).any())


def test_cached_cells_are_the_hits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, data, png = traced(HITS, "stallfree.prefix:small_blocks", tmp_path, capsys)
    hits = printed_hits(out)
    assert hits == {(1, 1): 6, (6, 2): 6}  # r1 and r2 hit r0's 6 shared tokens (docs/prefix.md)
    assert cells(data, CACHED) == set(hits)
    assert any(c["key"] == CACHED and c["label"].startswith("cached") for c in data["categories"])
    for (step, rid), n in hits.items():  # the page says how many, on the admission's entry
        entry = next(e for e in data["steps"][step]["entries"] if e["rid"] == rid)
        assert entry["kind"] == "admission" and entry["text"].endswith(f"({n} cached)")
    assert has_colour(png, CACHED_COLOUR)


def test_the_recorder_reads_the_monitors_claims() -> None:
    workload = Workload.loads(HITS.read_text())
    recorder = PagedRecorder(workload, "stallfree.prefix:small_blocks", "prefix")
    claims: set[tuple[int, int]] = set()

    def on_step(monitor, facts) -> None:  # type: ignore[no-untyped-def]
        recorder.on_step(monitor, facts)
        claims.update((facts.step, rid) for rid, n in facts.claimed.items() if n)

    play(workload, small_blocks, on_step=on_step, on_add=recorder.on_add, contract=registry.PREFIX)  # type: ignore[arg-type]
    grid = recorder.grid()
    assert claims and {(i, rid) for rid, row in grid.items() for i, k in enumerate(row) if k == CACHED} == claims


@pytest.mark.parametrize("run", ["no-shared-content", "paged-design"])
def test_no_hit_no_cached_cell(run: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Negative control: a run with no hit draws no cached cell, in the grid or the PNG."""
    scheduler = "stallfree.prefix:small_blocks" if run == "no-shared-content" else "stallfree.paged:small_blocks"
    out, data, png = traced(no_hits(tmp_path), scheduler, tmp_path, capsys)
    assert printed_hits(out) == {}
    assert cells(data, CACHED) == set() and cells(data, "admission")  # its admissions drawn as such
    assert not has_colour(png, CACHED_COLOUR)
