"""Wall and CPU seconds of FOLD (induction, any N) on the reference's policy, in one process, medians of
N runs (the row `stallfree prove`'s Z3 group adds).

    python benchmarks/fold_any_n.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from stallfree.proofs.smt import fold_induction


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    walls, cpus = [], []
    for _ in range(args.rounds):
        began, cpu = time.perf_counter(), time.process_time()
        out = fold_induction.prove()
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - cpu)
    print(f"{fold_induction.NAME}: {out.verdict.value}; median wall {statistics.median(walls):.2f} s, "
          f"CPU {statistics.median(cpus):.2f} s of {args.rounds}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
