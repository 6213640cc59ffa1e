"""The paged model check's states/s at a bound, in each mode of the shared search (`live`: a monitor
kept per frontier state; `compact`: fingerprints, the frontier rebuilt; `workers=N`: compact in N
processes; `unrevisited`: live with the revisit check of hidden state turned off, to show what that
check costs), and, with `--base REV`, the paged check of an earlier commit run beside them (its
proofs/explicit read from git, as `base`). Rounds are interleaved so that the shared machine's noise
hits every mode alike; medians are printed, of wall-clock states/s and of states per CPU second of
this process (one-process modes only: less sensitive to other jobs), with the states and
transitions, which must agree across modes.

    python benchmarks/paged_modelcheck.py [--bound B,S,K,R,P,M] [--rounds N] [--modes ...] [--base REV]
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oldcode import copy_package

from stallfree.faults.paged import small
from stallfree.proofs.explicit import modelcheck, paged
from stallfree.proofs.explicit.bounds import Bounds


def load_old(rev: str, where: Path) -> Any:
    """`proofs/explicit` at `rev`, as the package old_explicit; its check keeps to the old signature."""
    copy_package(rev, "proofs/explicit", where / "old_explicit")
    sys.path.insert(0, str(where))
    return importlib.import_module("old_explicit.paged")


def unrevisited(bounds: Bounds) -> Any:
    checked, modelcheck.REVISITS_CHECKED = modelcheck.REVISITS_CHECKED, 0
    try:
        return paged.check(bounds, small)
    finally:
        modelcheck.REVISITS_CHECKED = checked


def runner(mode: str, old: Any) -> Callable[[Bounds], Any]:
    if mode == "base":
        return lambda bounds: old.check(bounds, small)
    if mode == "unrevisited":
        return unrevisited
    workers = int(mode.split("=")[1]) if mode.startswith("workers=") else 1
    return lambda bounds: paged.check(bounds, small, compact=mode != "live", workers=workers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bound", default="2,2,6,3,3,3", metavar="B,S,K,R,P,M")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="live,compact,workers=2,unrevisited")
    parser.add_argument("--base", default=None, help="git revision whose paged check runs beside (as `base`)")
    args = parser.parse_args()
    bounds = Bounds.parse(args.bound)
    modes = (["base"] if args.base else []) + args.modes.split(",")
    with tempfile.TemporaryDirectory() as where:
        old = load_old(args.base, Path(where)) if args.base else None
        runs = {mode: runner(mode, old) for mode in modes}
        rates: dict[str, list[float]] = {mode: [] for mode in modes}
        cpu_rates: dict[str, list[float]] = {mode: [] for mode in modes}
        figures: dict[str, tuple[int, int, bool]] = {}
        for _ in range(args.rounds):
            for mode, run in runs.items():
                began = time.process_time()
                result = run(bounds)
                rates[mode].append(result.states / result.seconds)
                cpu_rates[mode].append(result.states / max(time.process_time() - began, 1e-9))
                figures[mode] = (result.states, result.transitions, result.holds)
    print(f"paged model check of stallfree.faults.paged:small at {args.bound}, median of {args.rounds} "
          f"interleaved rounds (load average {os.getloadavg()[0]:.1f})")
    print(f"{'mode':<12} {'states':>9} {'transitions':>12} {'holds':>6} {'states/s':>9} {'vs ' + modes[0]:>8} "
          f"{'CPU st/s':>9} {'vs ' + modes[0]:>8}")
    first, first_cpu = statistics.median(rates[modes[0]]), statistics.median(cpu_rates[modes[0]])
    for mode in modes:
        states, transitions, holds = figures[mode]
        rate, cpu_rate = statistics.median(rates[mode]), statistics.median(cpu_rates[mode])
        cpu = "-" if mode.startswith("workers=") else f"{cpu_rate:,.0f}"
        vs_cpu = "-" if mode.startswith("workers=") else f"{cpu_rate / first_cpu:.2f}x"
        print(f"{mode:<12} {states:>9,} {transitions:>12,} {holds!s:>6} {rate:>9,.0f} {rate / first:>7.2f}x "
              f"{cpu:>9} {vs_cpu:>8}")
    same = len({figures[mode] for mode in modes}) == 1
    print("states, transitions and verdict agree across modes" if same else "MODES DISAGREE")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
