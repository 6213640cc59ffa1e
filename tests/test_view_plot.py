"""The PNG step view: drawn for the hand trace, a wrong scheduler and a run too big for text in
its cells, from the same grid the HTML draws."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from stallfree.commands.trace import HAND_TRACE
from stallfree.faults import FAULTS
from stallfree.main import main
from stallfree.reference import Scheduler
from stallfree.spec import Arrival, Config, Workload
from stallfree.view import record
from stallfree.view.grid import BY_KEY, grid

pytest.importorskip("matplotlib")


def pixels(path: Path):  # type: ignore[no-untyped-def]
    from matplotlib.image import imread

    return imread(str(path))


def has_colour(image, colour: str) -> bool:  # type: ignore[no-untyped-def]
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    rgb = image[..., :3]
    close = (abs(rgb[..., 0] - r) < 0.02) & (abs(rgb[..., 1] - g) < 0.02) & (abs(rgb[..., 2] - b) < 0.02)
    return int(close.sum()) > 50


def test_trace_plot_draws_every_kind_the_run_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "hand.png"
    assert main(["trace", "--example", "hand", "--plot", str(out)]) == 0
    assert f"plot: {out}" in capsys.readouterr().out
    image = pixels(out)
    assert image.shape[0] > 400 and image.shape[1] > 800
    for key in ("decode", "chunk", "admission"):
        assert has_colour(image, BY_KEY[key].colour), key
    assert not has_colour(image, BY_KEY["ready-idle"].colour)  # the reference never leaves one out


def test_a_ready_request_left_out_is_drawn(tmp_path: Path) -> None:
    from stallfree.view.plot import plot

    rec = record(HAND_TRACE, FAULTS["DECODE-FIRST"], rules=["BUDGET"])
    assert "ready-idle" in {k for row in grid(rec).values() for k in row}
    image = pixels(plot(rec, tmp_path / "wrong.png"))
    assert has_colour(image, BY_KEY["ready-idle"].colour)


def test_a_large_run_is_drawn_without_cell_text(tmp_path: Path) -> None:
    from stallfree.view.plot import TEXT_CELLS, plot

    rng = random.Random(0)
    arrivals = tuple(Arrival(i, rng.randint(1, 40), rng.randint(1, 12), i // 2) for i in range(36))
    rec = record(Workload(Config(32, 6, 300), arrivals), Scheduler)
    assert len(rec.steps) * len(rec.rids) > TEXT_CELLS
    image = pixels(plot(rec, tmp_path / "big.png", [1.0] * len(rec.shown_steps)))
    assert has_colour(image, BY_KEY["no-slot"].colour) or has_colour(image, BY_KEY["no-kv"].colour)
