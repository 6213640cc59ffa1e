"""What `LIVENESS (induction, any N)` costs: its part (a), LIVENESS-STEPS (induction, phases chained)
proved on the reference, against the row's own work once (a)'s result is given (part (b): the sequence
and zero-work theorems), side by side in each round, with medians and their ratio; then the row's
verdict on each negative control (docs/proofs.md, Liveness).

    python benchmarks/liveness_any_n.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from stallfree.proofs.smt import induction, liveness_any_n
from stallfree.proofs.smt.liveness_planted import PLANTED
from stallfree.proofs.smt.mutants import MUTANTS
from stallfree.proofs.smt.policy import Policy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    ranking, own = [], []
    for round_ in range(args.rounds):
        began = time.perf_counter()
        ranked = induction.prove_induction(liveness_any_n.STEPS, Policy())
        ranking.append(time.perf_counter() - began)
        began = time.perf_counter()
        outcome = liveness_any_n.prove(Policy(), ranked)
        own.append(time.perf_counter() - began)
        print(f"round {round_ + 1}: part (a) {ranking[-1]:.3f} s ({ranked.verdict}), the row given (a) "
              f"{own[-1]:.3f} s ({outcome.verdict})", flush=True)
    a, b = statistics.median(ranking), statistics.median(own)
    print(f"median: part (a) {a:.3f} s, the row's own {b:.3f} s, ratio {b / a:.2f}; "
          f"load average {os.getloadavg()[0]:.1f} at the end")
    for name, cls in {"LifoAdmission": MUTANTS["LifoAdmission"], **PLANTED}.items():
        outcome = liveness_any_n.prove(cls())
        print(f"{name}: {outcome.verdict}: {outcome.detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
