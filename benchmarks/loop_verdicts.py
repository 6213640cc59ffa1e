"""Every loop induction's verdict (and the obligation named) on the reference's policy and every wrong
policy (`mutants`, `induction.CONTROLS`, OneTokenPrefill), of an earlier commit's tree (`--base`, read
from git into a temporary folder and run through its `src/` view) against the working tree's: the pairs
that differ, so that a change to the inductions' premises shows which verdicts it moves.

    python benchmarks/loop_verdicts.py [--base REV]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from prove_methods_base import ROOT, tree  # run as a script, its folder is on the path

VERDICTS = """
import json
from stallfree.proofs.smt import chain, induction, liveness_steps, mutants
from stallfree.proofs.smt.liveness_induction import LIVENESS_INDUCTIONS
from stallfree.proofs.smt.policy import Policy
policies = {"reference": Policy, **mutants.MUTANTS, **induction.CONTROLS,
            "OneTokenPrefill": liveness_steps.OneTokenPrefill}
out = {}
for loop in (*induction.INDUCTIONS, *chain.CHAINS, *LIVENESS_INDUCTIONS):
    for name, cls in policies.items():
        r = induction.prove_induction(loop, cls())
        out[f"{loop.name} / {name}"] = [r.verdict.value, (r.counterexample or {}).get("obligation")]
print(json.dumps(out))
"""


def verdicts(src: Path) -> dict[str, list[str | None]]:
    done = subprocess.run([sys.executable, "-c", VERDICTS], capture_output=True, text=True, check=True, cwd=src,
                          env={**os.environ, "PYTHONPATH": str(src)})
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="main")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before, after = verdicts(tree(args.base, Path(tmp))), verdicts(ROOT / "src")
    moved = {k: (before.get(k), after.get(k)) for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    print(f"base {args.base}: {len(before)} (row, policy) pairs before, {len(after)} after, {len(moved)} differ")
    for key, (old, new) in sorted(moved.items()):
        print(f"  {key}: {old} -> {new}")


if __name__ == "__main__":
    main()
