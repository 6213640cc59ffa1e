"""The plots are written as PNGs (matplotlib, an optional extra: skipped where it is missing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallfree.costs import Deployment, Roofline, gpu, model
from stallfree.sim import timeline
from stallfree.sim.policies import COMPARED, factory
from stallfree.sim.simulator import simulate
from stallfree.sim.sweep import Setup, budget_points, rate_points, run_point
from stallfree.sim.trace import load
from stallfree.spec import Config

pytest.importorskip("matplotlib")

from stallfree.sim.plots import plot_budgets, plot_rates, plot_run, plot_timeline

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DEPLOYMENT = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8")
SETUP = Setup(DEPLOYMENT, "full", 256)
LIMIT = 60


def is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == PNG_MAGIC


def test_run_plot(tmp_path: Path) -> None:
    result = simulate(load("code").head(LIMIT), factory("reference"), Config(2048, 256, 10**6),
                      Roofline(DEPLOYMENT, "full"), "reference")
    (path,) = plot_run(result, tmp_path)
    assert is_png(path)


def test_budget_and_rate_plots(tmp_path: Path) -> None:
    budgets = [run_point(SETUP, p).to_json() for p in budget_points(["code"], COMPARED, (512, 4096), LIMIT)]
    assert is_png(plot_budgets(budgets, tmp_path / "budget.png"))
    rates = [run_point(SETUP, p).to_json() for p in rate_points("code", COMPARED, 2048, (1, 4), LIMIT)]
    assert is_png(plot_rates(rates, (1, 4), tmp_path / "rates.png"))


def test_timeline_plot(tmp_path: Path) -> None:
    roofline = Roofline(DEPLOYMENT, "floor")
    timelines = [timeline.run(p, roofline, 2048) for p in COMPARED]
    assert is_png(plot_timeline(timelines, tmp_path / "timeline.png"))
