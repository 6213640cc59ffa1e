"""The step view of the paged design (`stallfree.paged`): KV in blocks, preemption by recompute. Each
step as the paged monitor judged it: what every request ran (a decode, a chunk, an admission, or a
chunk recomputing what a preemption threw away), which requests were preempted (their blocks freed,
back at the head of the line), which admissions held cached prompt tokens (a design with a prefix cache:
`facts.claimed`; that cell is drawn "cached"), and the blocks in use against the pool. Recorded from the paged
monitor's facts (`PagedRecorder.on_step`), drawn as a PNG (`plot_paged`) or as the step view's HTML
page (`paged_data`, for `html.page_of`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stallfree.spec import RuleViolation, Workload
from stallfree.spec.verdict import Verdict

from .grid import BY_KEY, CATEGORIES, Category
from .table import verdicts, wrap_entries

RECOMPUTE, PREEMPTED, WAITING_LINE, CACHED = "recompute", "preempted", "waiting-line", "cached"
KINDS = ("decode", "chunk", "admission", RECOMPUTE)  # a step's tokens, by kind
PAGED_CATEGORIES: tuple[Category, ...] = (
    *(c for c in CATEGORIES if c.key in ("decode", "chunk", "admission")),
    Category(RECOMPUTE, "recompute (a preempted request's tokens again)", "#17becf"),
    Category(PREEMPTED, "preempted (blocks freed, back at the head)", "#8c564b"),
    Category(CACHED, "cached (admitted holding cached prompt tokens)", "#bcbd22"),
    Category(WAITING_LINE, "waiting", "#c7c7c7"),
    BY_KEY["finished"],
)
DPI = 110


@dataclass(frozen=True, slots=True)
class PagedEntryView:
    rid: int
    n: int
    kind: str  # one of KINDS
    text: str  # as the paged step table writes it: `r1 chunk 0-3 (admitted) (recompute)`


@dataclass(frozen=True, slots=True)
class PagedStepView:
    step: int
    budget: int
    entries: tuple[PagedEntryView, ...]
    preempted: tuple[int, ...]
    waiting: tuple[int, ...]  # the line after the step, head first
    emitted: tuple[int, ...]
    ended: tuple[int, ...]
    blocks_in_use: int
    cached: tuple[tuple[int, int], ...] = ()  # (rid, cached prompt tokens) of each admission that hit

    @property
    def num_tokens(self) -> int:
        return sum(e.n for e in self.entries)

    def tokens(self, kind: str) -> int:
        return sum(e.n for e in self.entries if e.kind == kind)


def entries_of(facts: Any) -> tuple[PagedEntryView, ...]:
    """The plan's entries in plan order, each with its kind (a chunk of a re-admitted request: recompute)."""
    kinds: dict[int, tuple[str, str]] = {t.rid: ("decode", "decode") for t, _ in facts.decodes}
    for c in facts.chunks + facts.admitted:
        admitted = c in facts.admitted
        kind = RECOMPUTE if c.is_recompute else "admission" if admitted else "chunk"
        text = f"chunk {c.start}-{c.start + c.n}" + (" (admitted)" if admitted else "") + (
            " (recompute)" if c.is_recompute else "")
        kinds[c.track.rid] = (kind, text)
    return tuple(PagedEntryView(rid, n, kinds.get(rid, ("decode", f"n={n}"))[0],
                            f"r{rid} {kinds.get(rid, ('', f'n={n}'))[1]}") for rid, n in facts.plan)


@dataclass(slots=True)
class PagedRecorder:
    """The paged run, step by step; give `on_step` to `play` as its on_step."""

    workload: Workload
    scheduler: str
    design: str = "paged"  # the registry's name of the design the monitor judged: "paged" or "prefix"
    block_size: int = 0  # the pool's, read off the monitor at the first step
    num_blocks: int = 0
    steps: list[PagedStepView] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    violation: RuleViolation | None = None

    def on_add(self, arrival: Any, accepted: bool) -> None:
        if accepted:
            self.accepted.append(arrival.rid)

    def on_step(self, monitor: Any, facts: Any) -> None:
        shadow = monitor.shadow
        self.block_size, self.num_blocks = shadow.pool.block_size, shadow.pool.num_blocks
        self.steps.append(PagedStepView(
            facts.step, monitor.config.token_budget, entries_of(facts), tuple(t.rid for t in facts.preempted),
            tuple(t.rid for t in shadow.waiting), tuple(facts.emitted), tuple(t.rid for t in facts.ended),
            self.num_blocks - shadow.free_blocks,
            tuple((rid, n) for rid, n in getattr(facts, "claimed", {}).items() if n)))

    def grid(self) -> dict[int, list[str | None]]:
        """rid -> a category per step (None before it arrived), in arrival order."""
        arrival = {a.rid: a.arrival_step for a in self.workload.requests}
        rows: dict[int, list[str | None]] = {rid: [None] * len(self.steps) for rid in self.accepted}
        done: set[int] = set()
        for i, view in enumerate(self.steps):
            ran = {e.rid: e.kind for e in view.entries} | {rid: CACHED for rid, _ in view.cached}
            for rid, row in rows.items():
                if rid in done or arrival[rid] > view.step:
                    continue
                row[i] = PREEMPTED if rid in view.preempted else ran.get(rid) or (
                    WAITING_LINE if rid in view.waiting else None)
            done |= set(view.ended)
            for rid in view.ended:
                if rid in rows:
                    rows[rid][i + 1:] = ["finished"] * (len(self.steps) - i - 1)
        return rows


def plot_paged(recorder: PagedRecorder, path: Path, broken: Sequence[RuleViolation] = ()) -> Path:
    """Tokens by kind per step against B; every request by step; blocks in use against the pool."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    steps, rows, cfg = recorder.steps, recorder.grid(), recorder.workload.config
    colour = {c.key: c.colour for c in PAGED_CATEGORIES}
    num_steps = max(len(steps), 1)
    grid_height = min(9.0, max(1.6, 0.28 * max(len(rows), 1)))
    fig, (tokens, cells, blocks) = plt.subplots(3, 1, figsize=(min(22.0, max(9.0, 3.0 + 0.32 * num_steps)),
                                                                 2.6 + grid_height + 2.0), sharex=True,
                                                gridspec_kw={"height_ratios": [2.4, grid_height, 1.8]})
    xs, bottom = [v.step for v in steps], [0] * len(steps)
    for kind in KINDS:
        values = [v.tokens(kind) for v in steps]
        tokens.bar(xs, values, bottom=bottom, width=0.8, color=colour[kind], label=kind)
        bottom = [b + h for b, h in zip(bottom, values, strict=True)]
    tokens.axhline(cfg.token_budget, color="black", linestyle="--", linewidth=1)
    tokens.set(ylabel="tokens", ylim=(0, cfg.token_budget * 1.15))
    tokens.set_title(f"{recorder.scheduler} ({recorder.design} design): B={cfg.token_budget}, S={cfg.max_seqs}, "
                     f"{recorder.num_blocks} blocks of {recorder.block_size} tokens; tokens per step by kind",
                     fontsize=11, loc="left")
    tokens.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    keys = [c.key for c in PAGED_CATEGORIES]
    matrix = [[0 if k is None else 1 + keys.index(k) for k in row] for row in rows.values()]
    if matrix:
        cells.imshow(matrix, aspect="auto", cmap=ListedColormap(["#ffffff", *(c.colour for c in PAGED_CATEGORIES)]),
                     vmin=0, vmax=len(keys), interpolation="nearest",
                     extent=(-0.5, num_steps - 0.5, len(matrix) - 0.5, -0.5))
    cells.set_yticks(range(len(rows)))
    cells.set_yticklabels([f"r{rid}" for rid in rows], fontsize=8)
    cells.set_ylim(len(rows) - 0.5, -0.5)
    cells.set_title("every request by step: what it ran, preempted, or waiting", fontsize=10, loc="left")
    shown = {k for row in rows.values() for k in row if k is not None}
    cells.legend(handles=[Patch(color=c.colour, label=c.label) for c in PAGED_CATEGORIES if c.key in shown],
                 loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    blocks.bar(xs, [v.blocks_in_use for v in steps], width=0.8, color="#9467bd", alpha=0.6)
    blocks.axhline(recorder.num_blocks, color="black", linestyle="--", linewidth=1)
    blocks.set(ylabel="blocks", xlabel="step", ylim=(0, recorder.num_blocks * 1.15))
    blocks.set_title("KV blocks in use after each step (a block holds a request's next tokens)", fontsize=10,
                     loc="left")
    blocks.set_xlim(-0.6, num_steps - 0.4)
    if num_steps <= 60:
        blocks.set_xticks(range(num_steps))
    for violation in [*broken, *([recorder.violation] if recorder.violation is not None else [])]:
        for ax in (tokens, cells, blocks):
            ax.axvline(violation.step, color="#d62728", linewidth=2, alpha=0.6)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def paged_data(recorder: PagedRecorder) -> dict[str, Any]:
    """The run in the shape of the step view's page (`view.html.data`): KV counted in the tokens of the
    blocks in use, the kinds of tokens with recompute among them, the waiting and the preempted named."""
    cfg, size = recorder.workload.config, recorder.block_size
    arrival = {a.rid: a for a in recorder.workload.requests}
    steps = []
    for view in recorder.steps:
        ran, cached = {e.rid: e.n for e in view.entries}, dict(view.cached)
        cells = [{"rid": rid, "state": "paged", "n": n, "why": None} for rid, n in ran.items()]
        cells += [{"rid": rid, "state": "waiting", "n": 0, "why": "preempted" if rid in view.preempted else "waiting"}
                  for rid in (*view.preempted, *(r for r in view.waiting if r not in view.preempted))
                  if arrival[rid].arrival_step <= view.step]
        steps.append({"step": view.step, "arrived": [r for r, a in arrival.items() if a.arrival_step == view.step],
                      "entries": [{"rid": e.rid, "n": e.n, "kind": e.kind, "text": e.text + (
                          f" ({cached[e.rid]} cached)" if e.rid in cached else "")} for e in view.entries],
                      "tokens": {kind: view.tokens(kind) for kind in KINDS}, "num_tokens": view.num_tokens,
                      "emitted": list(view.emitted), "finished": list(view.ended), "completed": True,
                      "kv_in_use": view.blocks_in_use * size, "kv_after": view.blocks_in_use * size, "cells": cells,
                      "ms": None})
    marks = [recorder.violation] if recorder.violation is not None else []
    return {
        "scheduler": recorder.scheduler, "kinds": list(KINDS),
        "config": {"token_budget": cfg.token_budget, "max_seqs": cfg.max_seqs, "kv_tokens": recorder.num_blocks * size},
        "requests": [{"rid": rid, "prompt_len": arrival[rid].prompt_len, "max_new": arrival[rid].max_new,
                      "arrival_step": arrival[rid].arrival_step} for rid in recorder.accepted],
        "refused": [], "steps": steps, "grid": {str(rid): row for rid, row in recorder.grid().items()},
        "categories": [{"key": c.key, "label": c.label, "colour": c.colour} for c in PAGED_CATEGORIES],
        "broken": [{"rule": v.rule, "step": v.step, "message": v.message} for v in marks],
    }


def paged_page(recorder: PagedRecorder) -> str:
    from .html import page_of

    cfg = recorder.workload.config
    return page_of(paged_data(recorder), f"stallfree step view: {recorder.scheduler} ({recorder.design} design), "
                   f"B={cfg.token_budget}, S={cfg.max_seqs}, {recorder.num_blocks} blocks of {recorder.block_size}",
                   "KV blocks in use, in tokens (a block holds a request's next tokens; freed by a preemption)")


# The paged step table, as `stallfree trace` prints it for a design with this view (`Contract.drawer`).
ENTRIES_WIDTH = 48  # the entries column; a plan that does not fit goes on under it
HEADER = f"{'step':>5}  {'entries':<{ENTRIES_WIDTH}} {'tokens':>9}  {'emitted':<14} {'finished':<10} {'free blk':>8}"


def row(facts: Any, budget: int, free_blocks: int) -> str:
    """The step's row: `r3 decode`, `r1 chunk 7-14`, `r2 chunk 0-5 (admitted)`, `(recompute)` on a
    re-admitted request's chunks (as `entries_of` names them); entries that do not fit their column go
    on lines of their own under it."""
    emitted = " ".join(f"r{r}" for r in facts.emitted) or "-"
    ended = " ".join(f"r{t.rid}" for t in facts.ended) or "-"
    first, *more = wrap_entries([e.text for e in entries_of(facts)] or ["(empty)"], ENTRIES_WIDTH)
    line = (f"{facts.step:>5}  {first:<{ENTRIES_WIDTH}} {f'{facts.num_tokens}/{budget}':>9}  {emitted:<14} "
            f"{ended:<10} {free_blocks:>8}")
    return "\n".join([line, *(f"{'':>5}  {part}" for part in more)])


def workload_verdicts(checked: list[str], steps: int, violation: RuleViolation | None, adds: int,
                      registry: Any) -> list[Any]:
    """The verdicts of a played workload; a workload carries no cancels, so CANCEL was judged on none."""
    judged = verdicts(checked, steps, violation, adds, registry=registry)
    for i, j in enumerate(judged):
        if j.claim == "CANCEL" and j.verdict is Verdict.HOLDS:
            judged[i] = type(j)("CANCEL", Verdict.NOT_JUDGED, "(no cancel in a workload)")
    return judged
