"""Campaign throughput of the plain Python core against the mypyc-compiled copy of the same source
(scripts/compiled.sh), side by side in one run: rounds alternate between the two.

    python benchmarks/campaign_compiled.py [--sims 500] [--jobs 1] [--rounds 3] [--seed 0]

Each run is a fresh process (the compiled copy is chosen by PYTHONPATH). Both must do exactly the
same work (simulations, steps, tokens); the script fails if they do not. Prints the median steps per
CPU-second of a worker (one core's rate) and wall time for each, and their ratio."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPILED = ROOT / os.environ.get("STALLFREE_COMPILED", "build/compiled")  # where scripts/compiled.sh builds

RUN = """
import json, sys, time
import stallfree.spec.reservation.monitor as monitor
from stallfree.reference import Scheduler
from stallfree.testing.campaign import Campaign, run
sims, jobs, seed = map(int, sys.argv[1:4])
started = time.perf_counter()
t = run(Campaign(sims, seed, Scheduler, jobs=jobs))
wall = time.perf_counter() - started
print(json.dumps({"sims": t.sims, "steps": t.steps, "tokens": t.tokens, "cpu": t.cpu_seconds, "wall": wall,
                  "broken": t.violation is not None, "monitor": monitor.__file__}))
"""


def measure(core: str, sims: int, jobs: int, seed: int) -> dict[str, object]:
    env = dict(os.environ)
    if core == "compiled":
        env["PYTHONPATH"] = f"{COMPILED}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(COMPILED)
    out = subprocess.run([sys.executable, "-c", RUN, str(sims), str(jobs), str(seed)], env=env, check=True,
                         capture_output=True, text=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    is_compiled = not str(result["monitor"]).endswith(".py")
    if is_compiled != (core == "compiled"):
        raise SystemExit(f"the {core} run imported the monitor from {result['monitor']}")
    if result["broken"]:
        raise SystemExit(f"a rule was broken in the {core} run")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    subprocess.run(["bash", str(ROOT / "scripts" / "compiled.sh")], check=True,
                   env={**os.environ, "STALLFREE_PYTHON": sys.executable})
    runs: dict[str, list[dict[str, object]]] = {"python": [], "compiled": []}
    for i in range(args.rounds):
        for core in runs:
            runs[core].append(measure(core, args.sims, args.jobs, args.seed))
            print(f"round {i + 1}/{args.rounds} {core}: done", file=sys.stderr, flush=True)
    work = {core: {(r["sims"], r["steps"], r["tokens"]) for r in rs} for core, rs in runs.items()}
    if len(work["python"] | work["compiled"]) != 1:
        raise SystemExit(f"the two cores did different work: {work}")
    sims, steps, tokens = work["python"].pop()
    print(f"{sims:,} simulations, {steps:,} steps, {tokens:,} tokens, {args.jobs} job(s), {args.rounds} rounds "
          "(medians)")
    print(f"{'core':<9} {'wall s':>8} {'steps/s (wall)':>15} {'steps/CPU-s':>12}")
    rate: dict[str, float] = {}
    for core, rs in runs.items():
        wall = statistics.median(float(r["wall"]) for r in rs)  # type: ignore[arg-type]
        rate[core] = statistics.median(steps / float(r["cpu"]) for r in rs)  # type: ignore[arg-type]
        print(f"{core:<9} {wall:>8.1f} {steps / wall:>15,.0f} {rate[core]:>12,.0f}")
    print(f"compiled / python: {rate['compiled'] / rate['python']:.2f}x steps per CPU-second")
    return 0


if __name__ == "__main__":
    sys.exit(main())
