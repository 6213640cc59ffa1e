"""`stallfree budget`: the KV arithmetic it prints is the deployment's own, and --plot draws the rows
it prints (TTFT and the stream gap against B), refusing a path it cannot write before any work."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stallfree.costs import MEMORY_SHARE, Deployment, gpu, model
from stallfree.main import main


def test_the_kv_lines_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["budget", "--budgets", "512", "--gpu", "h200", "--dtype", "bf16", "--tp", "8"]) == 0
    out = capsys.readouterr().out
    d = Deployment(model("llama-3.3-70b"), gpu("h200"), 8, "bf16", "bf16")
    per = re.search(r"KV per token = 2 \(key, value\) x (\d+) layers x (\d+) KV heads x (\d+) x (\d+) B \(bf16\) "
                    r"= ([\d,]+) B", out)
    assert per is not None, out
    layers, heads, dim, width = (int(per.group(i)) for i in range(1, 5))
    assert 2 * layers * heads * dim * width == int(per.group(5).replace(",", "")) == d.kv_bytes_per_token
    capacity = int(re.search(r"KV capacity: ([\d,]+) tokens", out).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert capacity == int((8 * 141e9 * MEMORY_SHARE - d.weight_bytes) // d.kv_bytes_per_token) == d.kv_tokens


def test_plot_draws_the_curve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from matplotlib.image import imread

    path = tmp_path / "curve.png"
    assert main(["budget", "--budgets", "64,512,4096", "--plot", str(path)]) == 0  # 64: no room beside 64 decodes
    assert f"plot: {path}" in capsys.readouterr().out
    assert imread(str(path)).shape[1] > 600


def test_plot_refuses_an_unwritable_path_before_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "missing" / "curve.png"
    assert main(["budget", "--plot", str(bad)]) == 2
    captured = capsys.readouterr()
    assert "--plot" in captured.err and str(bad) in captured.err and captured.out == ""
