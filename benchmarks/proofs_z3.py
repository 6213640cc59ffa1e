"""Z3 figures: seconds for each theorem at N symbolic requests, the total, and the loop theorems
(any N); the target is all theorems at N = 12 within 60 s.

    python benchmarks/proofs_z3.py [--requests 4 8 12]
"""

from __future__ import annotations

import argparse
import sys
import time

from stallfree.proofs.smt.loops import LOOP_THEOREMS, prove_loop
from stallfree.proofs.smt.theorems import THEOREMS, prove


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, nargs="*", default=[12])
    args = parser.parse_args()
    for n in args.requests:
        began = time.perf_counter()
        slowest = ("", 0.0)
        for theorem in THEOREMS:
            outcome = prove(theorem, num_requests=n)
            print(f"N={n:<3} {theorem.name:<22} {outcome.verdict.label:<15} {outcome.seconds:7.2f} s", flush=True)
            slowest = max(slowest, (theorem.name, outcome.seconds), key=lambda x: x[1])
        total = time.perf_counter() - began
        print(f"N={n}: all {len(THEOREMS)} step theorems in {total:.1f} s (slowest {slowest[0]}, {slowest[1]:.1f} s)")
    began = time.perf_counter()
    for loop in LOOP_THEOREMS:
        outcome = prove_loop(loop)
        print(f"any N {loop.name:<22} {outcome.verdict.label:<15} {outcome.seconds * 1000:7.1f} ms")
    print(f"loop theorems (any N): {(time.perf_counter() - began) * 1000:.0f} ms in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
