"""The budget trade-off as one picture: for each token budget B, the long prompt's time to first token
and the gap every running stream sees between two tokens (one step of B tokens), on the cost model.
`stallfree budget --plot FILE.png` draws the rows it prints; matplotlib (the `plot` extra) only here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DPI = 110


def plot_budget(rows: Sequence[Mapping[str, Any]], title: str, path: Path) -> Path:
    """rows: `stallfree budget`'s (budget, first_token_ms, stream_gap_ms); a budget whose prompt never
    gets a token (no room beside the decodes) is left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if r["first_token_ms"] is not None]
    budgets = [r["budget"] for r in shown]
    fig, ttft = plt.subplots(figsize=(8.0, 4.2))
    ttft.plot(budgets, [r["first_token_ms"] for r in shown], color="#1f77b4", marker="o",
              label="time to first token of the long prompt (TTFT)")
    ttft.set(xscale="log", xlabel="token budget B (tokens per step)", ylabel="TTFT ms",
             ylim=(0, max((r["first_token_ms"] for r in shown), default=1.0) * 1.2))
    gap = ttft.twinx()
    gap.plot(budgets, [r["stream_gap_ms"] for r in shown], color="#d62728", marker="s",
             label="gap between two tokens of a stream (TBT): one step")
    gap.set(ylabel="gap ms", ylim=(0, max((r["stream_gap_ms"] for r in shown), default=1.0) * 1.2))
    ttft.set_xticks(budgets, [f"{b:,}" for b in budgets], fontsize=8)
    ttft.minorticks_off()
    handles = ttft.get_legend_handles_labels()[0] + gap.get_legend_handles_labels()[0]
    ttft.legend(handles=handles, loc="upper center", fontsize=8, frameon=False)
    ttft.set_title(title, fontsize=10, loc="left")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
