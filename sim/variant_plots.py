"""The variants' plots (matplotlib, Agg): which streams get a token each step after a budget drop,
oldest-first against rotation; and time to first token by priority class over time, with and
without aging. Written and closed through `plots._save`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .plots import _pyplot, _save

PRIORITY_COLOURS = ("tab:gray", "tab:blue", "tab:orange", "tab:red")  # priority 0..3


def plot_stalls(panels: Sequence[tuple[str, list[set[int]]]], num_streams: int, drops: Sequence[tuple[int, int]],
                path: Path) -> Path:
    """One panel per policy: a cell for each (step, stream), dark where the stream got a token.
    `drops` are the (step, budget) changes, marked on every panel."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(panels), 1, figsize=(9.5, 2.3 * len(panels) + 0.4), sharex=True)
    for ax, (title, served) in zip(axes, panels, strict=True):
        grid = [[1.0 if rid in step else 0.0 for step in served] for rid in range(num_streams)]
        ax.imshow(grid, aspect="auto", cmap="Greys", interpolation="nearest", vmin=0, vmax=1)
        for step, budget in drops:
            ax.axvline(step - 0.5, color="tab:red", linewidth=1)
            ax.text(step, num_streams - 1, f" B={budget}", color="tab:red", fontsize=8,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
        ax.set_ylabel("stream (rid)")
        ax.set_title(title, fontsize=10)
    axes[-1].set_xlabel("step (dark: the stream got a token)")
    return _save(fig, path)


def plot_priority_ttft(panels: Sequence[tuple[str, dict[int, list[tuple[float, float]]]]], path: Path,
                       window: int = 200) -> Path:
    """One panel per policy: per priority class, the rolling median of TTFT (over `window` requests)
    against arrival time. `panels` hold, per class, (arrival seconds, TTFT seconds) in arrival order."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), sharey=True)
    for ax, (title, classes) in zip(axes, panels, strict=True):
        for priority, points in sorted(classes.items()):
            xs, ys = [], []
            for i in range(0, len(points), max(1, window // 4)):
                chunk = sorted(t for _, t in points[i:i + window])
                if chunk:
                    xs.append(points[i][0])
                    ys.append(chunk[len(chunk) // 2] * 1e3)
            ax.plot(xs, ys, color=PRIORITY_COLOURS[priority % 4], label=f"priority {priority}")
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("arrival (s)")
    axes[0].set_ylabel(f"TTFT, rolling median of {window} (ms)")
    axes[-1].legend(fontsize=8)
    return _save(fig, path)
