"""The model checker's scale against its targets (50,000 distinct states a second; 100 million states in
under 8 GB): distinct states a second and bytes a state, for each mode side by side at each bound:

- `compact`: `modelcheck.check(compact=True)`, one process (fingerprints in a dict, the graph kept:
  liveness and coverage included);
- `workers`: the same with one worker process per core (`os.cpu_count()`);
- `lean`: `lean.check`, the 8-byte-a-state fingerprint table, no graph (safety only), one process;
- `lean-workers`: the same with one worker process per core.

Each (bound, mode) runs in its own process, back to back; "peak MB" is that process's peak resident set
(the largest worker's added for `workers`), "B/state" the peak over the states, and for `lean` also the
visited table and paths alone ("table B/state"). The 1-minute load average is printed with each row:
the machine may be shared, and rates fall with load.

    python benchmarks/modelcheck_scale.py [--bounds B,S,K,R,P,M ...] [--modes compact,workers,lean,lean-workers]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

BOUNDS = ("2,3,8,4,3,3", "2,3,8,5,3,3")
MODES = ("compact", "workers", "lean", "lean-workers")


def run_one(bound: str, mode: str) -> dict[str, float]:
    """Run the check in this process and return its figures (the child side)."""
    from stallfree.proofs.explicit import lean, modelcheck
    from stallfree.proofs.explicit.bounds import Bounds

    bounds = Bounds.parse(bound)
    cores = os.cpu_count() or 1
    if mode.startswith("lean"):
        r = lean.check(bounds, workers=cores if mode == "lean-workers" else 1)
        table = r.bytes_per_state
    else:
        r = modelcheck.check(bounds, compact=True, workers=cores if mode == "workers" else 1)
        table = float("nan")
    assert r.complete and r.counterexample is None, (bound, mode)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"states": r.states, "seconds": r.seconds, "peak_kb": peak, "table": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bounds", nargs="+", default=list(BOUNDS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(*args.child)))
        return
    print(f"{'bound':<14} {'mode':<12} {'states':>11} {'seconds':>8} {'states/s':>9} {'peak MB':>8} "
          f"{'B/state':>8} {'table B/state':>13} {'load':>5}   (cores: {os.cpu_count()})")
    for bound in args.bounds:
        for mode in args.modes.split(","):
            out = subprocess.run([sys.executable, __file__, "--child", bound, mode], capture_output=True, text=True,
                                 check=True).stdout
            f = json.loads(out.splitlines()[-1])
            rate = f["states"] / f["seconds"]
            per = f["peak_kb"] * 1024 / f["states"]
            print(f"{bound:<14} {mode:<12} {f['states']:>11,} {f['seconds']:>8.1f} {rate:>9,.0f} "
                  f"{f['peak_kb'] / 1024:>8.0f} {per:>8.0f} {f['table']:>13.1f} {os.getloadavg()[0]:>5.1f}")


if __name__ == "__main__":
    main()
