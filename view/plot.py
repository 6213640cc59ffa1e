"""The step view as a PNG (matplotlib, Agg): tokens by kind per step against the budget, every
request by step (what it ran, or why it waited), and KV in use against K.

matplotlib is an optional extra (`stallfree[plot]`), imported only here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stallfree.spec import RuleViolation

from .grid import BY_KEY, CATEGORIES, grid
from .record import ADMISSION, CHUNK, DECODE, KINDS, Recording

DPI = 110
TEXT_CELLS = 1_500  # grids up to this many cells get their token counts written in
KIND_KEY = {DECODE: DECODE, CHUNK: CHUNK, ADMISSION: ADMISSION}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(recording: Recording, path: Path, ms: Sequence[float] | None = None,
         broken: Sequence[RuleViolation] = ()) -> Path:
    """Draw `recording` into `path`; `ms`, if given, is each shown step's milliseconds; each of
    `broken` (rules broken in earlier runs of the workload) is marked at its step, as is the
    recording's own violation."""
    plt = _pyplot()
    steps = recording.shown_steps
    rows = grid(recording)
    cfg = recording.config
    num_steps, num_rows = max(len(steps), 1), max(len(rows), 1)
    width = min(22.0, max(9.0, 3.0 + 0.32 * num_steps))
    grid_height = min(9.0, max(1.6, 0.28 * num_rows))
    fig, (tokens, cells, kv) = plt.subplots(
        3, 1, figsize=(width, 2.6 + grid_height + 2.0), sharex=True,
        gridspec_kw={"height_ratios": [2.4, grid_height, 1.8]},
    )
    xs = [v.step for v in steps]

    draw_tokens(tokens, recording, xs, ms)
    draw_cells(cells, recording, rows, num_steps)
    draw_kv(kv, recording, xs, num_steps)
    marks = [*broken, *([recording.violation] if recording.violation is not None else [])]
    for violation in marks:
        for ax in (tokens, cells, kv):
            ax.axvline(violation.step, color="#d62728", linewidth=2, alpha=0.6)
        tokens.text(violation.step, cfg.token_budget * 1.07, f" {violation.rule} broken", color="#d62728",
                    fontsize=9, ha="left")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def draw_tokens(tokens: Any, recording: Recording, xs: list[int], ms: Sequence[float] | None) -> None:
    """The top panel: each step's tokens by kind against the budget, and each step's ms when given."""
    steps, cfg = recording.shown_steps, recording.config
    bottom = [0] * len(steps)
    for kind in KINDS:
        values = [v.tokens(kind) for v in steps]
        tokens.bar(xs, values, bottom=bottom, width=0.8, color=BY_KEY[KIND_KEY[kind]].colour, label=kind)
        bottom = [b + h for b, h in zip(bottom, values, strict=True)]
    tokens.axhline(cfg.token_budget, color="black", linestyle="--", linewidth=1)
    tokens.text(0.005, cfg.token_budget, f"B = {cfg.token_budget}", transform=tokens.get_yaxis_transform(),
                va="bottom", ha="left", fontsize=9)
    tokens.set(ylabel="tokens", ylim=(0, cfg.token_budget * 1.15))
    tokens.set_title(f"{recording.scheduler or 'scheduler'}: B={cfg.token_budget}, S={cfg.max_seqs}, "
                     f"K={cfg.kv_tokens}; tokens per step by kind", fontsize=11, loc="left")
    tokens.legend(loc="upper left", bbox_to_anchor=(1.06, 1.0), fontsize=8, frameon=False)
    if ms is not None:
        twin = tokens.twinx()
        twin.plot(xs, list(ms), color="black", marker=".", linewidth=1, label="ms (cost model)")
        twin.set(ylabel="ms", ylim=(0, max(ms, default=1.0) * 1.3 or 1.0))
        twin.legend(loc="upper left", bbox_to_anchor=(1.06, 0.35), fontsize=8, frameon=False)


def draw_cells(cells: Any, recording: Recording, rows: Any, num_steps: int) -> None:
    """The middle panel: every request by step, what it ran or why it waited."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    steps = recording.shown_steps
    keys = [c.key for c in CATEGORIES]
    cmap = ListedColormap(["#ffffff"] + [c.colour for c in CATEGORIES])
    matrix = [[0 if k is None else 1 + keys.index(k) for k in row] for row in rows.values()]
    if matrix:
        cells.imshow(matrix, aspect="auto", cmap=cmap, vmin=0, vmax=len(keys), interpolation="nearest",
                     extent=(-0.5, num_steps - 0.5, len(matrix) - 0.5, -0.5))
    if len(steps) * len(rows) <= TEXT_CELLS:
        for i, v in enumerate(steps):
            for y, rid in enumerate(rows):
                n = next((c.n for c in v.cells if c.rid == rid), 0)
                if n:
                    cells.text(i, y, str(n), ha="center", va="center", fontsize=7, color="white")
    requests = {o.arrival.rid: o.arrival for o in recording.offers if o.accepted}
    cells.set_yticks(range(len(rows)))
    cells.set_yticklabels([f"r{rid} ({requests[rid].prompt_len}+{requests[rid].max_new})" for rid in rows],
                          fontsize=8)
    cells.set_ylim(len(rows) - 0.5, -0.5)
    cells.set_title("every request by step (prompt + max_new): what it ran, or why it waited", fontsize=10,
                    loc="left")
    shown = {k for row in rows.values() for k in row if k is not None}
    cells.legend(handles=[Patch(color=c.colour, label=c.label) for c in CATEGORIES if c.key in shown],
                 loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def draw_kv(kv: Any, recording: Recording, xs: list[int], num_steps: int) -> None:
    """The bottom panel: KV in use during each step against the pool."""
    steps, cfg = recording.shown_steps, recording.config
    kv.bar(xs, [v.kv_in_use for v in steps], width=0.8, color="#9467bd", alpha=0.6)
    kv.axhline(cfg.kv_tokens, color="black", linestyle="--", linewidth=1)
    kv.text(0.005, cfg.kv_tokens, f"K = {cfg.kv_tokens}", transform=kv.get_yaxis_transform(), va="bottom",
            ha="left", fontsize=9)
    kv.set(ylabel="KV tokens", xlabel="step", ylim=(0, cfg.kv_tokens * 1.15))
    kv.set_title("KV in use during each step (reservations: prompt_len + max_new from admission)", fontsize=10,
                 loc="left")
    kv.set_xlim(-0.6, num_steps - 0.4)
    if num_steps <= 60:
        kv.set_xticks(range(num_steps))
