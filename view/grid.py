"""The request-by-step grid both views draw: for every accepted request and every shown step, what
the request was doing, one category each, with one colour per category shared by the PNG and HTML."""

from __future__ import annotations

from dataclasses import dataclass

from .record import ADMISSION, CHUNK, DECODE, PARTIAL, READY, WAITING, Cell, Recording
from .waiting import NO_BUDGET, NO_KV, NO_SLOT, PASSED_OVER


@dataclass(frozen=True, slots=True)
class Category:
    key: str
    label: str
    colour: str


# Served first, then the ways of waiting, then the ways of being left out. A ready request that gets
# no decode, or a partial one that gets no chunk, is what the wrong orders do: drawn in red tones.
CATEGORIES: tuple[Category, ...] = (
    Category(DECODE, "decode (ready, 1 token)", "#1f77b4"),
    Category(CHUNK, "chunk (partial prompt)", "#ff7f0e"),
    Category(ADMISSION, "admitted (first chunk)", "#2ca02c"),
    Category("no-slot", f"waiting: {NO_SLOT}", "#7f7f7f"),
    Category("no-kv", f"waiting: {NO_KV}", "#9467bd"),
    Category("no-budget", f"waiting: {NO_BUDGET}", "#bcbd22"),
    Category("behind", "waiting: behind a blocked head", "#c7c7c7"),
    Category("passed-over", f"waiting: {PASSED_OVER}", "#e377c2"),
    Category("ready-idle", "ready, got no decode", "#d62728"),
    Category("partial-idle", "partial, got no chunk", "#ff9896"),
    Category("finished", "finished", "#eaf5ea"),
)
BY_KEY = {c.key: c for c in CATEGORIES}
WHY_KEY = {NO_SLOT: "no-slot", NO_KV: "no-kv", NO_BUDGET: "no-budget", PASSED_OVER: "passed-over"}


def category(cell: Cell) -> str:
    if cell.state == WAITING:
        if cell.n > 0:
            return ADMISSION
        return WHY_KEY.get(cell.why or "", "behind")
    if cell.state == PARTIAL:
        return CHUNK if cell.n > 0 else "partial-idle"
    if cell.state == READY:
        return DECODE if cell.n > 0 else "ready-idle"
    raise ValueError(f"cell state {cell.state!r} is not one of waiting, partial, ready")


def grid(recording: Recording) -> dict[int, list[str | None]]:
    """rid -> one category key per shown step (None before it arrived), in arrival order."""
    steps = recording.shown_steps
    rows: dict[int, list[str | None]] = {rid: [None] * len(steps) for rid in recording.rids}
    for i, view in enumerate(steps):  # steps are numbered from 0, one after another
        for cell in view.cells:
            rows[cell.rid][i] = category(cell)
        for rid in view.finished:
            rows[rid][i + 1:] = ["finished"] * (len(steps) - i - 1)
    return rows

