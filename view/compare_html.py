"""Several schedulers on one workload as one self-contained HTML page: a grid per policy on one step
axis, a shared slider, a play button that steps through the run, and each policy's running worst gap
between two tokens at the chosen step. The data is inline JSON drawn by plain JavaScript; nothing is
fetched, so the file works offline. `#step=N` at the end of the address opens it at step N."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from .compare import Run
from .grid import CATEGORIES, grid
from .html import _asset


def _run(run: Run) -> dict[str, Any]:
    steps = run.recording.shown_steps
    return {
        "name": run.name,
        "steps": [{"step": v.step, "entries": v.describe(), "tokens": v.num_tokens, "budget": v.budget}
                  for v in steps],
        "rids": list(run.recording.rids),
        "grid": {str(rid): row for rid, row in grid(run.recording).items()},
        "gaps": run.gaps,
        "gaps_ms": run.gaps_ms,
        "broken": [{"rule": v.rule, "step": v.step, "message": v.message} for v in run.broken],
    }


def data(runs: Sequence[Run]) -> dict[str, Any]:
    cfg = runs[0].recording.config
    return {
        "config": {"token_budget": cfg.token_budget, "max_seqs": cfg.max_seqs, "kv_tokens": cfg.kv_tokens},
        "runs": [_run(r) for r in runs],
        "categories": [{"key": c.key, "label": c.label, "colour": c.colour} for c in CATEGORIES],
    }


def page(runs: Sequence[Run]) -> str:
    payload = json.dumps(data(runs), separators=(",", ":")).replace("</", "<\\/")
    cfg = runs[0].recording.config
    title = html.escape(f"stallfree: {', '.join(r.name for r in runs)} side by side, B={cfg.token_budget}, "
                        f"S={cfg.max_seqs}, K={cfg.kv_tokens}")
    return TEMPLATE.format(title=title, style=_asset("view.css"), script=_asset("compare.js"), data=payload)


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
<noscript><p>This page draws the runs with JavaScript; the data is in the script element named data.</p></noscript>
<div id="controls">
  <button id="play" type="button" aria-label="play">&#9654; play</button>
  <button id="prev" type="button" aria-label="previous step">&#9664;</button>
  <input id="slider" type="range" min="0" max="0" value="0" aria-label="step">
  <button id="next" type="button" aria-label="next step">&#9654;</button>
  <span id="label"></span>
</div>
<section><h2>worst gap so far between two tokens of one stream, at the chosen step</h2>
<table id="gaps"></table></section>
<div id="runs"></div>
<section><h2>legend</h2><ul id="legend"></ul></section>
<script id="data" type="application/json">{data}</script>
<script>
{script}
</script>
</body>
</html>
"""
