"""The step view as one self-contained HTML page: the run's data inline as JSON, drawn as SVG by
a few lines of plain JavaScript, with a slider to move from step to step. Nothing is fetched: the
file works offline, opened from disk.

`#step=N` at the end of the page's address opens it at step N.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from stallfree.spec import RuleViolation

from .grid import CATEGORIES, grid
from .record import KINDS, Recording, StepView

_ASSETS = "html_assets"  # style and script, kept beside this module as plain files


def _asset(name: str) -> str:
    from importlib.resources import files

    return (files("stallfree.view") / _ASSETS / name).read_text()


def _step(view: StepView, ms: float | None) -> dict[str, Any]:
    return {
        "step": view.step,
        "arrived": list(view.arrived),
        "entries": [{"rid": e.rid, "n": e.n, "kind": e.kind, "text": e.describe()} for e in view.entries],
        "tokens": {kind: view.tokens(kind) for kind in KINDS},
        "num_tokens": view.num_tokens,
        "emitted": list(view.emitted),
        "finished": list(view.finished),
        "completed": view.completed,
        "kv_in_use": view.kv_in_use,
        "kv_after": view.kv_after,
        "cells": [{"rid": c.rid, "state": c.state, "n": c.n, "why": c.why} for c in view.cells],
        "ms": ms,
    }


def data(recording: Recording, ms: Sequence[float] | None = None,
         broken: Sequence[RuleViolation] = ()) -> dict[str, Any]:
    """Everything the page draws, as plain JSON."""
    steps = recording.shown_steps
    cfg = recording.config
    marks = [*broken, *([recording.violation] if recording.violation is not None else [])]
    requests = [
        {"rid": o.arrival.rid, "prompt_len": o.arrival.prompt_len, "max_new": o.arrival.max_new,
         "arrival_step": o.step}
        for o in recording.offers if o.accepted
    ]
    return {
        "scheduler": recording.scheduler,
        "config": {"token_budget": cfg.token_budget, "max_seqs": cfg.max_seqs, "kv_tokens": cfg.kv_tokens},
        "requests": requests,
        "refused": [{"rid": o.arrival.rid, "step": o.step} for o in recording.offers if not o.accepted],
        "steps": [_step(v, None if ms is None else ms[i]) for i, v in enumerate(steps)],
        "grid": {str(rid): row for rid, row in grid(recording).items()},
        "categories": [{"key": c.key, "label": c.label, "colour": c.colour} for c in CATEGORIES],
        "broken": [{"rule": v.rule, "step": v.step, "message": v.message} for v in marks],
    }


RESERVED = "KV in use (reserved at admission: prompt_len + max_new)"


def page(recording: Recording, ms: Sequence[float] | None = None, broken: Sequence[RuleViolation] = ()) -> str:
    """The HTML page of `recording`."""
    cfg = recording.config
    return page_of(data(recording, ms, broken), f"stallfree step view: {recording.scheduler or 'scheduler'}, "
                   f"B={cfg.token_budget}, S={cfg.max_seqs}, K={cfg.kv_tokens}", RESERVED)


def page_of(payload: dict[str, object], title: str, kv_title: str) -> str:
    """The page drawing `payload` (the shape `data` returns; another design's, `view.paged.paged_data`)."""
    text = json.dumps(payload, separators=(",", ":"))
    text = text.replace("</", "<\\/")  # a string in the data never closes the script element
    return TEMPLATE.format(title=html.escape(title), style=_asset("view.css"), script=_asset("view.js"), data=text,
                           kv_title=html.escape(kv_title))


TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{style}
</style>
</head>
<body>
<h1>{title}</h1>
<noscript><p>This page draws the run with JavaScript; the data is in the script element named data.</p></noscript>
<div id="controls">
  <button id="prev" type="button" aria-label="previous step">&#9664;</button>
  <input id="slider" type="range" min="0" max="0" value="0" aria-label="step">
  <button id="next" type="button" aria-label="next step">&#9654;</button>
  <span id="label"></span>
</div>
<section><h2>tokens per step, by kind</h2><div class="chart"><svg id="tokens" role="img"></svg></div></section>
<section><h2>every request by step: what it ran, or why it waited</h2>
<div class="chart"><svg id="grid" role="img"></svg></div></section>
<section><h2>{kv_title}</h2>
<div class="chart"><svg id="kv" role="img"></svg></div></section>
<section id="detail" aria-live="polite"></section>
<section><h2>legend</h2><ul id="legend"></ul></section>
<script id="data" type="application/json">{data}</script>
<script>
{script}
</script>
</body>
</html>
"""
