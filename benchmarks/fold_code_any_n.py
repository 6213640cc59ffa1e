"""Wall and CPU seconds of FOLD (code, induction, any N) on the reference's own schedule(), in one
process, medians of N runs (the row `stallfree prove`'s symbolic group adds), with FOLD (code) at its
default N = 3 measured beside it in the same rounds.

    python benchmarks/fold_code_any_n.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from stallfree.proofs.smt import code_fold, code_fold_induction
from stallfree.reference import Scheduler


def _timed(run: Callable[[], Any]) -> tuple[Any, float, float]:
    began, cpu = time.perf_counter(), time.process_time()
    out = run()
    return out, time.perf_counter() - began, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows: dict[str, tuple[list[float], list[float], Any]] = {}
    for _ in range(args.rounds):  # the two rows alternate, so that the load falls on both alike
        for name, run in ((code_fold_induction.NAME, lambda: code_fold_induction.prove(Scheduler)),
                          (code_fold.NAME, lambda: code_fold.prove(Scheduler))):
            out, wall, cpu = _timed(run)
            walls, cpus, _ = rows.setdefault(name, ([], [], None))
            walls.append(wall)
            cpus.append(cpu)
            rows[name] = (walls, cpus, out)
    for name, (walls, cpus, out) in rows.items():
        print(f"{name}: {out.verdict.value}; median wall {statistics.median(walls):.2f} s, "
              f"CPU {statistics.median(cpus):.2f} s of {args.rounds}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
