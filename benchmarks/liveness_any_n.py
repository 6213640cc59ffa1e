"""What `LIVENESS (induction, any N)` costs: its part (a), LIVENESS-STEPS (induction, phases chained)
proved on the reference, against the row's own work once (a)'s result is given, as `stallfree prove`
does it (part (b): the sequence and zero-work theorems, and CONFIG FIXED; its premise rows are the
run's own, settled after), and against the row alone given (a) (its premise rows proved here too),
side by side in each round, with medians and their ratios; then the row's verdict on each negative
control and on each correct control (`liveness_planted.CORRECT`); and the lasso check (the LIVENESS
model-check row) on the idler at 2,2,8,2,2,2 with its hidden state and without it (docs/proofs.md, Liveness).

    python benchmarks/liveness_any_n.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from stallfree.faults.starving import IdleOneInThree, idle_phase
from stallfree.proofs.explicit import starvation
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.smt import induction, liveness_any_n
from stallfree.proofs.smt.liveness_planted import CORRECT, PLANTED
from stallfree.proofs.smt.mutants import MUTANTS
from stallfree.proofs.smt.policy import Policy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    ranking, own, alone = [], [], []
    for round_ in range(args.rounds):
        began = time.perf_counter()
        ranked = induction.prove_induction(liveness_any_n.STEPS, Policy())
        ranking.append(time.perf_counter() - began)
        began = time.perf_counter()
        pending = liveness_any_n.prove(Policy(), ranked, premises={})
        own.append(time.perf_counter() - began)
        began = time.perf_counter()
        outcome = liveness_any_n.prove(Policy(), ranked)
        alone.append(time.perf_counter() - began)
        print(f"round {round_ + 1}: part (a) {ranking[-1]:.3f} s ({ranked.verdict}), the row in prove given (a) "
              f"{own[-1]:.3f} s ({pending.verdict} until settled), the row alone given (a) {alone[-1]:.3f} s "
              f"({outcome.verdict})", flush=True)
    a, b, c = statistics.median(ranking), statistics.median(own), statistics.median(alone)
    print(f"median: part (a) {a:.3f} s, the row in prove {b:.3f} s (ratio {b / a:.2f}), the row alone "
          f"{c:.3f} s (ratio {c / a:.2f}); load average {os.getloadavg()[0]:.1f} at the end")
    controls = {**{k: MUTANTS[k] for k in ("LifoAdmission", "ChangingBudget", "LeakyStart")}, **PLANTED, **CORRECT}
    for name, cls in controls.items():
        outcome = liveness_any_n.prove(cls())
        print(f"{name}: {outcome.verdict}: {outcome.detail}")
    for hidden in (idle_phase, None):
        lasso = starvation.check(Bounds.parse("2,2,8,2,2,2"), IdleOneInThree, hidden=hidden)
        print(f"lasso check, IdleOneInThree at 2,2,8,2,2,2, hidden {getattr(hidden, '__name__', None)}: "
              f"{lasso.verdict}, {lasso.states:,} states")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
