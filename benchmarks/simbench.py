"""What the simulator's sweeps share (run as `python benchmarks/NAME.py`, which puts this folder on the
import path): the deployment they price, the options every sweep takes, and its rows, run or read back."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stallfree.costs import Deployment, gpu, model
from stallfree.sim.sweep import Setup

MAX_SEQS = 256


def setup(mode: str = "full") -> Setup:
    """Llama 3.3 70B on 4 H100 SXM in FP8, MAX_SEQS slots, KV from memory, priced by `mode`."""
    return Setup(Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8"), mode, MAX_SEQS)


def parser(doc: str, add: Callable[[argparse.ArgumentParser], None], plot: str, replot: str) -> argparse.ArgumentParser:
    """The sweep's command line: --jobs, the options `add` adds, then --plot (a folder for `plot`),
    --json and --replot (`replot`: what it does with a saved --json instead of running)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=2)
    add(p)
    p.add_argument("--plot", type=Path, default=None, help=f"folder for {plot}")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--replot", type=Path, default=None, help=f"skip the runs: {replot} a saved --json")
    return p


def rows(args: argparse.Namespace, run: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The rows of the file --replot names, else those `run` returns; written to --json when given."""
    found: list[dict[str, Any]] = json.loads(args.replot.read_text()) if args.replot is not None else run()
    if args.json is not None:
        args.json.write_text(json.dumps(found, indent=1))
    return found
