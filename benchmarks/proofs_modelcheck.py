"""Model checker figures: states, transitions, depth, seconds and states/s at a ladder of bounds,
stopping after the first bound that takes longer than the time limit; and the cost of one copy of a
reference state, its classes' own copies (`clone`: `proofs.explicit.reference_copy` and the shadow's
`__deepcopy__`) against the generic field walk, measured side by side. Memory is the peak resident
set of the process that ran the bound (each bound and mode runs in its own), plus, with workers,
that of the largest worker; CPU is the seconds of all its processes during the check (imports left
out). Modes: `live` (a scheduler kept per frontier state), `compact` (fingerprints, frontier states
beyond `modelcheck.LIVE_STATES` rebuilt; one process), `workers=N` (compact, N worker processes),
`symmetric` (compact, one process, ready requests' order dropped); a mode ending `+compiled` runs on
the mypyc-compiled copy of the core (scripts/compiled.sh, built first if needed; the row checks it
imported it). The modes of a bound run back to back, and the load average (1 minute) is printed
beside each, since the machine is shared.

    python benchmarks/proofs_modelcheck.py [--limit SECONDS] [--bounds B,S,K,R,P,M ...] [--modes ...]
        [--max-states N] [--base REV [--rounds N]]

With `--base REV`, each bound and mode runs `--rounds` times for that commit's tree (staged by
holdstage.py; its own compiled copy for +compiled) and this one, alternating, and the medians follow:
distinct states a second of wall time and of CPU time, side by side, and whether both trees found the
same states, transitions, depth, longest behaviour, steps to drain, verdict and coverage counts.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import stallfree.reference.scheduler as scheduler_module
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.clone import clone
from stallfree.proofs.explicit.modelcheck import check
from stallfree.reference import Scheduler
from stallfree.spec import Config, Monitor
from stallfree.spec.reservation.shadow import Shadow

# S > B (READY-WITHIN-BUDGET can fail) and M = 3 throughout; the second is `stallfree prove`'s default.
LADDER = ("2,3,8,3,3,3", "2,3,8,4,3,3", "2,3,8,5,3,3", "3,4,12,5,4,3", "2,3,8,6,3,3", "3,4,12,6,4,3")
COPIES = 2000
HEADER = (f"{'bound B,S,K,R,P,M':<16} {'mode':<18} {'states':>10} {'transitions':>12} {'depth':>6} {'seconds':>8} "
          f"{'states/s':>9} {'CPU s':>7} {'peak MB':>8} {'wkr MB':>8} {'KB/state':>8} {'longest':>8} {'drain':>6} "
          f"{'load':>5}  result")
ROOT = Path(__file__).resolve().parent.parent
FIGURES = "@figures "  # the line a row's process ends with, for the side-by-side medians (`--base`)


def copy_cost() -> None:
    config = Config(4, 3, 16)
    monitor = Monitor(Scheduler(4, 3, 16), config)
    for rid, (p, m) in enumerate(((3, 2), (5, 2), (2, 3))):
        monitor.add(rid, p, m)
    monitor.step()
    own = (monitor.scheduler, monitor.shadow)
    walked = (clone(monitor.scheduler), clone(monitor.shadow))
    walked[0].__class__, walked[1].__class__ = _Walked, _WalkedShadow  # no copy of their own: the walk
    rounds: dict[str, list[float]] = {"own": [], "walk": []}
    for _ in range(5):  # interleaved rounds: both see the same machine load
        for name, state in (("own", own), ("walk", walked)):
            began = time.perf_counter()
            for _ in range(COPIES):
                clone(state)
            rounds[name].append((time.perf_counter() - began) / COPIES * 1e6)
    o, w = statistics.median(rounds["own"]), statistics.median(rounds["walk"])
    print(f"copy of a reference state + shadow: their own copies {o:.0f} us, the generic field walk {w:.0f} us "
          f"(median of 5 rounds); walk / own = {w / o:.1f}x")


class _Walked(Scheduler):
    """The reference, copied by the walk (`clone` copies only the reference's own class its own way)."""


@dataclasses.dataclass(slots=True)
class _WalkedShadow(Shadow):
    """The shadow, likewise."""


def progress(states: int, transitions: int, depth: int, seconds: float) -> None:
    print(f"  {states:,} states, depth {depth}, {seconds:.0f} s", file=sys.stderr, flush=True)


def one(label: str, mode: str, max_states: int | None) -> None:
    """One bound in this process (so its peak resident set is its own); prints one table row."""
    base, _, core = mode.partition("+")
    imported = Path(scheduler_module.__file__ or "").suffix == ".so"
    if imported != (core == "compiled"):
        raise SystemExit(f"mode {mode} imported the scheduler from {scheduler_module.__file__}")
    workers = int(base.split("=")[1]) if base.startswith("workers=") else 1
    started = resource.getrusage(resource.RUSAGE_SELF)
    result = check(Bounds.parse(label), on_progress=progress, compact=base != "live", workers=workers,
                   max_states=max_states, symmetry=base == "symmetric")
    verdict = "holds" if result.holds else (result.counterexample.rule if result.counterexample else "incomplete")
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mb = own.ru_maxrss / 1024  # Linux: KB
    worker_mb = children.ru_maxrss / 1024 if workers > 1 else 0.0
    cpu = own.ru_utime + own.ru_stime - started.ru_utime - started.ru_stime + children.ru_utime + children.ru_stime
    print(f"{label:<16} {mode:<18} {result.states:>10,} {result.transitions:>12,} {result.depth:>6} "
          f"{result.seconds:>8.1f} {result.states_per_second:>9,.0f} {cpu:>7.1f} {peak_mb:>8,.0f} {worker_mb:>8,.0f} "
          f"{peak_mb * 1024 / result.states:>8.2f} {result.longest_steps!s:>8} {result.drain_bound!s:>6} "
          f"{os.getloadavg()[0]:>5.1f}  {verdict}", flush=True)
    coverage = [c.transitions for c in result.coverage] if result.coverage else None
    print(FIGURES + json.dumps({"counts": [result.states, result.transitions, result.depth, result.longest_steps,
                                           result.drain_bound, verdict, coverage],
                                "seconds": result.seconds, "cpu": cpu}), flush=True)


def compiled_path(root: Path = ROOT) -> str:
    """The compiled copy of the core (scripts/compiled.sh) of the source tree `root`, built first if
    missing or stale."""
    stage = str(root / (os.environ.get("STALLFREE_COMPILED") or "build/compiled"))  # relative: to root, as there
    env = {**os.environ, "STALLFREE_COMPILED": stage, "STALLFREE_PYTHON": sys.executable}
    subprocess.run(["bash", str(root / "scripts" / "compiled.sh")], env=env, check=True, stdout=subprocess.DEVNULL)
    return stage


def run_row(label: str, mode: str, path: str | None, max_states: int | None, name: str = "") -> dict[str, Any] | None:
    """One bound and mode in its own process, `path` first on its PYTHONPATH (None: this tree as
    installed); prints its row (after `name`) and returns its figures (None if it printed none)."""
    command = [sys.executable, __file__, "--one", f"{label}:{mode}"]
    if max_states is not None:
        command += ["--max-states", str(max_states)]
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
    out = subprocess.run(command, check=False, env=env, stdout=subprocess.PIPE, text=True).stdout
    figures = None
    for line in out.splitlines():
        if line.startswith(FIGURES):
            figures = json.loads(line.removeprefix(FIGURES))
        else:
            print(f"{name:<6}{line}" if name else line, flush=True)
    return figures


def side_by_side(args: argparse.Namespace, modes: list[str]) -> int:
    """Each bound and mode `--rounds` times, the base commit's tree and this one alternating, then the
    medians: states a second of wall time and of CPU time (all the row's processes), and whether both
    trees found the same counts (states, transitions, depth, longest, drain, verdict, coverage)."""
    from holdstage import resolve, stage_commit

    compiled = any(m.endswith("+compiled") for m in modes)
    with tempfile.TemporaryDirectory() as scratch:
        base = stage_commit(resolve(args.base), Path(scratch))
        paths = {"base": (str(base), compiled_path(Path(scratch) / "src") if compiled else None),
                 "tree": (None, compiled_path() if compiled else None)}
        print(f"base {args.base}; {args.rounds} rounds, the trees alternating", flush=True)
        print(HEADER, flush=True)
        rows: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for label in args.bounds:
            for _ in range(args.rounds):
                for mode in modes:
                    for name, (python, stage) in paths.items():
                        figures = run_row(label, mode, stage if mode.endswith("+compiled") else python,
                                          args.max_states, name)
                        if figures is not None:
                            rows.setdefault((label, mode, name), []).append(figures)
    return summary(rows)


def summary(rows: dict[tuple[str, str, str], list[dict[str, Any]]]) -> int:
    """The medians of `side_by_side`'s rows, the two trees of each bound and mode beside each other."""
    print(f"\n{'bound':<14} {'mode':<20} {'base st/s':>10} {'tree st/s':>10} {'ratio':>6} {'base st/CPU-s':>14} "
          f"{'tree st/CPU-s':>14} {'ratio':>6}  counts")
    same = True
    for (label, mode, name), figures in rows.items():
        if name != "base" or (label, mode, "tree") not in rows:
            continue
        tree = rows[(label, mode, "tree")]
        wall = [statistics.median(f["counts"][0] / f["seconds"] for f in r) for r in (figures, tree)]
        cpu = [statistics.median(f["counts"][0] / f["cpu"] for f in r) for r in (figures, tree)]
        counts = {json.dumps(f["counts"]) for f in figures + tree}
        same = same and len(counts) == 1
        print(f"{label:<14} {mode:<20} {wall[0]:>10,.0f} {wall[1]:>10,.0f} {wall[1] / wall[0]:>5.2f}x {cpu[0]:>14,.0f} "
              f"{cpu[1]:>14,.0f} {cpu[1] / cpu[0]:>5.2f}x  "
              f"{'the same' if len(counts) == 1 else 'DIFFER: ' + str(counts)}")
    return 0 if same else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=float, default=120.0, help="stop after a bound slower than this (s)")
    parser.add_argument("--bounds", nargs="*", default=list(LADDER), metavar="B,S,K,R,P,M")
    parser.add_argument("--modes", default="compact,workers=2", help="comma-separated: live (a scheduler per "
                        "frontier state), compact (fingerprints, frontier past LIVE_STATES rebuilt, one process), "
                        "workers=N "
                        "(compact, N worker processes), symmetric (compact, ready requests' order dropped); each bound "
                        "and mode in its own process")
    parser.add_argument("--max-states", type=int, default=None, help="stop each bound past this many states")
    parser.add_argument("--base", default=None,
                        help="a commit to run beside this tree (rows alternating), then medians")
    parser.add_argument("--rounds", type=int, default=3, help="with --base: the rounds of each bound and mode")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: run one bound:mode here
    args = parser.parse_args()
    if args.one is not None:
        label, mode = args.one.split(":")
        one(label, mode, args.max_states)
        return 0
    modes = args.modes.split(",")
    for mode in modes:
        base, plus, core = mode.partition("+")
        known = base in ("live", "compact", "symmetric") or re.fullmatch(r"workers=[1-9][0-9]*", base)
        if not known or (plus and core != "compiled"):
            parser.error(f"--modes: unknown mode {mode!r}; the modes are live, compact, symmetric, workers=N, "
                         "each optionally ending +compiled")
    if args.base is not None:
        return side_by_side(args, modes)
    copy_cost()
    stage = compiled_path() if any(m.endswith("+compiled") for m in modes) else None
    print(HEADER, flush=True)
    for label in args.bounds:
        slowest = 0.0
        for mode in modes:  # side by side: the modes of a bound run back to back
            began = time.perf_counter()
            run_row(label, mode, stage if mode.endswith("+compiled") else None, args.max_states)
            slowest = max(slowest, time.perf_counter() - began)
        if slowest > args.limit:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
