"""What the adds' obligations (`proofs.smt.liveness_adds`) cost `LIVENESS (induction, any N)`: the
join and part (b) proved on the reference with and without them, alternating in one process, and the
frame check (`fold_induction.refused`, which builds each phase's FOLD obligations and solves nothing);
medians and ratios (docs/proofs.md, the bound for any N).

    python benchmarks/liveness_adds.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from stallfree.proofs.smt import fold_induction, induction, liveness_bound, liveness_join
from stallfree.proofs.smt.induction import Obligation
from stallfree.proofs.smt.policy import Policy

ADDS = ("join: the adds leave the config and the free KV", "join: the adds keep the ranking's premise")


def _seconds(obligations: list[Obligation], policy: Policy) -> float:
    began = time.perf_counter()
    result = induction._prove(obligations, liveness_join.NAME, policy, 30_000)
    if not result.holds:
        raise SystemExit(f"not holding on the reference: {result.counterexample}")
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    policy = Policy()
    print(f"load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    times: dict[str, list[float]] = {k: [] for k in ("join without", "join with", "(b) without", "(b) with", "frame")}
    for _ in range(args.rounds):
        for part, obligations in (("join", liveness_join.join(policy)), ("(b)", liveness_bound.bound(policy=policy))):
            times[f"{part} with"].append(_seconds(obligations, policy))
            times[f"{part} without"].append(_seconds([o for o in obligations if not o.name.startswith(ADDS)], policy))
        began = time.perf_counter()
        fold_induction.refused(policy)
        times["frame"].append(time.perf_counter() - began)
    m = {k: statistics.median(v) for k, v in times.items()}
    for part in ("join", "(b)"):
        print(f"{part}: without the adds' obligations {m[part + ' without']:.3f} s, with {m[part + ' with']:.3f} s "
              f"(ratio {m[part + ' with'] / m[part + ' without']:.2f})")
    print(f"the frame check: {m['frame']:.3f} s; load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
