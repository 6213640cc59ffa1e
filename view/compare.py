"""Several schedulers on one workload, side by side: each run's request-by-step grid on one step axis,
and the running worst gap between two tokens of a stream, per policy (in steps, and in milliseconds
when the steps are priced). The PNG is drawn here; the HTML page is `compare_html`."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stallfree.spec import RuleViolation

from .grid import CATEGORIES, grid
from .record import Recording

DPI = 110
GAP_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


@dataclass(slots=True)
class Run:
    """One policy's run of the workload: its name, the recording (every rule it broke left unchecked,
    so the run is whole), the rules it broke, and each shown step's milliseconds if priced."""

    name: str
    recording: Recording
    broken: list[RuleViolation] = field(default_factory=list)
    ms: list[float] | None = None

    @property
    def gaps(self) -> list[int]:
        return running_worst_gap(self.recording)

    @property
    def gaps_ms(self) -> list[float] | None:
        return None if self.ms is None else running_worst_gap_ms(self.recording, self.ms)


def worst_ttft(recording: Recording) -> int | None:
    """The longest time to first token over the requests that got one, in steps (1: the step it
    arrived before); None if none did."""
    firsts = {rid: steps[0] for rid, steps in token_steps(recording).items() if steps}
    return max((i - recording.arrival_step(rid) + 1 for rid, i in firsts.items()), default=None)


def token_steps(recording: Recording) -> dict[int, list[int]]:
    """rid -> the shown steps (indexes) in which the request emitted a token, in order."""
    out: dict[int, list[int]] = {rid: [] for rid in recording.rids}
    for i, view in enumerate(recording.shown_steps):
        if view.completed:
            for rid in view.emitted:
                out.setdefault(rid, []).append(i)
    return out


def running_worst_gap(recording: Recording) -> list[int]:
    """For each shown step, the longest gap so far between two tokens of one request, in steps (1: a
    token every step; 0 before any request's second token)."""
    ends: dict[int, int] = {}  # step index -> the longest gap closed by a token in it
    for steps in token_steps(recording).values():
        for a, b in itertools.pairwise(steps):
            ends[b] = max(ends.get(b, 0), b - a)
    out, worst = [], 0
    for i in range(len(recording.shown_steps)):
        worst = max(worst, ends.get(i, 0))
        out.append(worst)
    return out


def running_worst_gap_ms(recording: Recording, ms: Sequence[float]) -> list[float]:
    """The same in milliseconds: a gap is the time of the steps after the first token up to the second."""
    elapsed = [0.0]
    for x in ms:
        elapsed.append(elapsed[-1] + x)  # elapsed[i + 1]: the end of step i
    ends: dict[int, float] = {}
    for steps in token_steps(recording).values():
        for a, b in itertools.pairwise(steps):
            ends[b] = max(ends.get(b, 0.0), elapsed[b + 1] - elapsed[a + 1])
    out, worst = [], 0.0
    for i in range(len(ms)):
        worst = max(worst, ends.get(i, 0.0))
        out.append(worst)
    return out


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_compare(runs: Sequence[Run], path: Path) -> Path:
    """One panel per policy (its grid), then the running worst gap of every policy, on one step axis."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    plt = _pyplot()
    num_steps = max((len(r.recording.shown_steps) for r in runs), default=1) or 1
    rows = [grid(r.recording) for r in runs]
    heights = [max(1.2, 0.26 * max(len(g), 1)) for g in rows]
    width = min(22.0, max(9.0, 3.0 + 0.32 * num_steps))
    fig, axes = plt.subplots(len(runs) + 1, 1, figsize=(width, sum(heights) + 2.6 + 0.5 * len(runs)), sharex=True,
                             gridspec_kw={"height_ratios": [*heights, 2.2]})
    keys = [c.key for c in CATEGORIES]
    cmap = ListedColormap(["#ffffff"] + [c.colour for c in CATEGORIES])
    shown: set[str] = set()
    for ax, run, g in zip(axes, runs, rows, strict=False):
        matrix = [[0 if k is None else 1 + keys.index(k) for k in row] for row in g.values()]
        if matrix:
            ax.imshow(matrix, aspect="auto", cmap=cmap, vmin=0, vmax=len(keys), interpolation="nearest",
                      extent=(-0.5, len(matrix[0]) - 0.5, len(matrix) - 0.5, -0.5))
        shown |= {k for row in g.values() for k in row if k is not None}
        ax.set_yticks(range(len(g)))
        ax.set_yticklabels([f"r{rid}" for rid in g], fontsize=8)
        ax.set_ylim(len(g) - 0.5, -0.5)
        broke = ", ".join(dict.fromkeys(v.rule for v in run.broken)) or "no rule"
        ax.set_title(f"{run.name}: {len(run.recording.shown_steps)} steps, worst TTFT "
                     f"{worst_ttft(run.recording) or '-'} step(s), worst gap {(run.gaps or [0])[-1]} step(s); "
                     f"breaks {broke}", fontsize=10, loc="left")
    axes[0].legend(handles=[Patch(color=c.colour, label=c.label) for c in CATEGORIES if c.key in shown],
                   loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    gap_ax = axes[-1]
    priced = all(r.ms is not None for r in runs)
    for i, run in enumerate(runs):
        values = run.gaps_ms if priced else run.gaps
        gap_ax.step(range(len(values or [])), values or [], where="post", color=GAP_COLOURS[i % len(GAP_COLOURS)],
                    linewidth=2, label=run.name)
    gap_ax.set(xlabel="step", ylabel="ms" if priced else "steps")
    gap_ax.set_title("worst gap so far between two tokens of one stream", fontsize=10, loc="left")
    gap_ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    gap_ax.set_xlim(-0.6, num_steps - 0.4)
    if num_steps <= 60:
        gap_ax.set_xticks(range(num_steps))
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
