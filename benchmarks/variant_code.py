"""The variants' code theorems (`proofs/smt/variant_code.py`): each theorem of each variant (both
renderings) under its contract, its verdict, paths, states the hypothesis allows and seconds (the
median of --rounds runs), at N = 2 (what `stallfree prove --methods variants` runs) or, with --deep,
N = 3 (what `--profile deep` adds); then the total seconds.

    python benchmarks/variant_code.py [--deep] [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics

from stallfree.proofs.smt.variant_code import THEOREMS, prove
from stallfree.proofs.variant_code_rows import DEEP_N, N, variant_cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deep", action="store_true", help=f"N = {DEEP_N} instead of {N}")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each theorem; the median seconds is shown")
    args = parser.parse_args()
    n = DEEP_N if args.deep else N
    print("| variant | contract | theorem | N | verdict | paths | states | seconds (median) |")
    print("|---|---|---|---|---|---|---|---|")
    total = 0.0
    for name, make, contract in variant_cases():
        for theorem in THEOREMS:
            runs = [prove(theorem, make, contract, n) for _ in range(args.rounds)]
            seconds = statistics.median(o.seconds for o in runs)
            total += seconds
            o = runs[0]
            print(f"| {name} | {contract.name} | {theorem.name} | {n} | {o.verdict.value} | {o.paths:,} | "
                  f"{o.states:,} | {seconds:.2f} |", flush=True)
    print(f"\ntotal {total:.1f} s")


if __name__ == "__main__":
    main()
