"""What stops and cancels add to each variant's model check: the same bound explored without the
environment's stop and cancel actions and with them (`Bounds.lifecycle`), its states, transitions and
seconds side by side, for every variant `stallfree prove --methods variants` checks with them
(`proofs.variant_rows.cases`); with --deep, at each case's deep bound instead (what `--profile deep`
adds).

    python benchmarks/variant_ends.py [--deep]
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from stallfree.proofs.explicit.variants import VariantBounds, check
from stallfree.proofs.variant_rows import cases


def without_ends(vb: VariantBounds) -> VariantBounds:
    return replace(vb, bounds=replace(vb.bounds, lifecycle=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deep", action="store_true", help="each case's deep bound instead of its default")
    args = parser.parse_args()
    print("| contract | variant | bound | without ends: states, transitions, s | with ends: states, transitions, s "
          "| verdict |")
    print("|---|---|---|---|---|---|")
    for case in cases():
        if case.lifecycle is None:
            continue
        bound = case.deep if args.deep and case.deep is not None else case.lifecycle
        for name, factory in case.variants:
            plain, ends = (check(case.contract, vb, factory) for vb in (without_ends(bound), bound))
            print(f"| {case.contract.name} | {name} | {without_ends(bound).label()} | "
                  f"{plain.states:,}, {plain.transitions:,}, {plain.seconds:.2f} | "
                  f"{ends.states:,}, {ends.transitions:,}, {ends.seconds:.2f} | "
                  f"{plain.verdict.value} / {ends.verdict.value} |", flush=True)


if __name__ == "__main__":
    main()
