"""Timing default `stallfree conform` runs of several targets, side by side, shared by the conform
benchmarks (run as `python benchmarks/NAME.py`, which puts this folder on the import path)."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from stallfree.conformance.kit import DEFAULT_EXAMPLES, conform


def arguments(doc: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES)
    parser.add_argument("--repeats", type=int, default=1)
    return parser.parse_args()


def time_conform(targets: Sequence[str], args: argparse.Namespace, describe: Callable[[Any], str],
                 name: Callable[[str], str] = str, width: int = 32) -> None:
    """Run the kit on each target `args.repeats` times in turn, printing each run (`describe(report)`)
    and then each target's median wall time."""
    times: dict[str, list[float]] = {t: [] for t in targets}
    for _ in range(args.repeats):
        for target in targets:
            started = time.perf_counter()
            report = conform(target, examples=args.examples)
            times[target].append(time.perf_counter() - started)
            print(f"{name(target):<{width}} {times[target][-1]:6.1f} s  {describe(report)}", flush=True)
    for target in targets:
        print(f"median {name(target):<{width}} {statistics.median(times[target]):6.1f} s over {args.repeats} run(s)")
