"""The compiled campaign (scripts/compiled.sh) of an older commit against the working tree's, side by
side in one run: rounds alternate the order of the two copies.

    python benchmarks/campaign_compiled_base.py [--base main] [--sims 500] [--rounds 5]

The commit is laid out by `git archive` in a temporary folder and compiled there by its own
scripts/compiled.sh; the working tree's copy is built as scripts/compiled.sh builds it (build/compiled,
or $STALLFREE_COMPILED). Each run is a fresh process on one job; both must do the same work
(simulations, steps, tokens, verdict). Prints each copy's median steps per CPU-second and the median
over rounds of head / base CPU time per step (above 1: the working tree is slower)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from campaign_compiled import COMPILED, ROOT

RUN = """
import json, sys
import stallfree.spec.reservation.monitor as monitor
from stallfree.reference import Scheduler
from stallfree.testing.campaign import Campaign, run
t = run(Campaign(int(sys.argv[1]), 0, Scheduler, jobs=1))
print(json.dumps({"work": [t.sims, t.steps, t.tokens, t.violation is None], "cpu": t.cpu_seconds,
                  "monitor": monitor.__file__}))
"""


def build(root: Path, stage: Path) -> None:
    env = dict(os.environ, STALLFREE_PYTHON=sys.executable, STALLFREE_COMPILED=str(stage))
    subprocess.run(["bash", str(root / "scripts/compiled.sh"), "true"], env=env, check=True, cwd=root)


def measure(stage: Path, sims: int) -> tuple[float, list[object]]:
    env = dict(os.environ, PYTHONPATH=str(stage))
    out = json.loads(subprocess.run([sys.executable, "-c", RUN, str(sims)], env=env, capture_output=True,
                                    text=True, check=True, cwd=tempfile.gettempdir()).stdout)
    if not out["monitor"].endswith(".so"):
        raise SystemExit(f"not the compiled monitor: {out['monitor']}")
    return out["cpu"] / out["work"][1], out["work"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main")
    parser.add_argument("--sims", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stallfree-base-") as folder:
        base_root = Path(folder) / "src"
        base_root.mkdir()
        archive = subprocess.run(["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base_root)], input=archive, check=True)
        stages = {"base": Path(folder) / "compiled", "head": COMPILED}
        build(base_root, stages["base"])
        build(ROOT, stages["head"])
        costs: dict[str, list[float]] = {"base": [], "head": []}
        work: dict[str, list[object]] = {}
        for r in range(args.rounds):
            for name in ("base", "head") if r % 2 == 0 else ("head", "base"):
                cost, work[name] = measure(stages[name], args.sims)
                costs[name].append(cost)
    if work["base"] != work["head"]:
        raise SystemExit(f"different work: base {work['base']}, head {work['head']}")
    ratio = statistics.median(h / b for h, b in zip(costs["head"], costs["base"], strict=True))
    print(f"compiled campaign, {args.sims} sims from seed 0, one job: base {args.base} vs working tree, "
          f"{args.rounds} rounds interleaved; work (sims, steps, tokens, clean) {work['head']}")
    for name in ("base", "head"):
        print(f"  {name}: {1 / statistics.median(costs[name]):,.0f} steps per CPU-second (median)")
    print(f"  ratio head / base CPU time per step: {ratio:.2f}x")


if __name__ == "__main__":
    main()
