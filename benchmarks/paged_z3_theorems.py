"""CPU seconds of each paged Z3 step theorem (`proofs.smt.paged_step`: PAGED-INIT and THEOREMS) at each N
given, in this tree beside an earlier commit's (`--base REV`, read from git into a temporary folder), in
one run: for each N the two trees alternate, each in its own process. Every solver call gives up after
`--timeout-s` seconds, so a theorem that runs out of time reads `unknown` with the seconds it took,
never `holds`.

    python benchmarks/paged_z3_theorems.py --base REV [--requests 3,4] [--timeout-s 30]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from oldcode import ROOT
from paged_z3_prove import checkout

CHILD = """
import json, sys, time
from stallfree.proofs.smt import paged_step as ps
n, timeout_ms = int(sys.argv[1]), int(sys.argv[2])
began = time.process_time()
out = {"PAGED-INIT": [str(ps.prove_init(n).verdict), time.process_time() - began]}
for t in ps.THEOREMS:
    began = time.process_time()
    out[t.name] = [str(ps.prove(t, None, n, timeout_ms=timeout_ms).verdict), time.process_time() - began]
print(json.dumps(out))
"""


def per_theorem(src: Path, n: int, timeout_s: float) -> dict[str, list]:  # type: ignore[type-arg]
    """{theorem: [verdict, CPU s]} of one child process importing stallfree from `src`."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(n), str(int(timeout_s * 1000))], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(src)}, check=False, cwd=src.parent)
    if done.returncode != 0:
        raise SystemExit(f"N={n} in {src}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="git revision to run beside this tree")
    parser.add_argument("--requests", default="3,4", help="the N values, comma-separated (default 3,4)")
    parser.add_argument("--timeout-s", type=float, default=30.0, help="each solver call's limit (default 30)")
    args = parser.parse_args()
    sizes = [int(x) for x in args.requests.split(",")]
    with tempfile.TemporaryDirectory() as where:
        trees = {args.base[:9]: checkout(args.base, Path(where)), "this tree": ROOT / "src"}
        results = {(name, n): per_theorem(src, n, args.timeout_s) for n in sizes for name, src in trees.items()}
    names = list(trees)
    print(f"{'theorem':<16}" + "".join(f"{f'N={n} {name}':>22}" for n in sizes for name in names))
    for theorem in results[(names[0], sizes[0])]:
        cells = []
        for n in sizes:
            for name in names:
                verdict, cpu = results[(name, n)][theorem]
                cells.append(f"{cpu:7.2f} s {verdict:>8}")
        print(f"{theorem:<16}" + "".join(f"{c:>22}" for c in cells))
    totals = "".join(f"{sum(v[1] for v in results[(name, n)].values()):9.2f} s{'':>11}"
                     for n in sizes for name in names)
    print(f"{'total':<16}{totals}  (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
