"""What the phase guard (`proofs.smt.phase_guard`) costs each loop-induction row: the guard alone on
the reference, beside the row it stands before (PROGRESS (induction), guard included), alternating in
one process; medians and their ratio (docs/proofs.md, the phase guard).

    python benchmarks/phase_guard.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from stallfree.proofs.smt import induction, phase_guard
from stallfree.proofs.smt.policy import Policy

ROW = next(loop for loop in induction.INDUCTIONS if loop.name == "PROGRESS (induction)")


def _guard() -> float:
    began = time.perf_counter()
    if phase_guard.unjudged(Policy()) is not None or phase_guard.foreign_writes(Policy()):
        raise SystemExit("the guard stops the reference")
    return time.perf_counter() - began


def _row() -> float:
    began = time.perf_counter()
    if not induction.prove_induction(ROW, Policy()).holds:
        raise SystemExit(f"{ROW.name} does not hold on the reference")
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    guard, row = [], []
    for _ in range(rounds):
        guard.append(_guard())
        row.append(_row())
    g, r = statistics.median(guard), statistics.median(row)
    print(f"load average {os.getloadavg()[0]:.1f}; {rounds} rounds")
    print(f"the guard: median {g:.4f} s; {ROW.name} (guard included): median {r:.3f} s; guard / row {g / r:.3f}")


if __name__ == "__main__":
    main()
