"""Bytecode instructions a step of `simulate` executes (sys.settrace with f_trace_opcodes: deterministic, unlike
CPU time on a shared machine), unchecked and checked, on older commits and the working tree, each laid out as the
installed package and run in a process of its own (`holdstage`).

    python benchmarks/sim_instructions.py                      # 1e2414f, main and the working tree, 1,000 requests
    python benchmarks/sim_instructions.py --revs main --requests 3000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import holdstage

COUNT = r"""
import sys
from stallfree import costs
from stallfree.sim.trace import Trace, load
from stallfree.sim.simulator import simulate
from stallfree.spec import Config
from stallfree.reference import Scheduler
dep = costs.Deployment(costs.model("llama-3.3-70b"), costs.gpu("h100-sxm"), 4, "fp8")
roofline, config = costs.Roofline(dep, "full"), Config(2048, 256, dep.kv_tokens)
for name in ("conv", "code"):
    head = Trace(name, load(name).requests[:int(sys.argv[1])])
    counts = []
    for check in (False, True):
        count = [0]
        def tracer(frame, event, arg):
            frame.f_trace_opcodes = True
            if event == "opcode":
                count[0] += 1
            return tracer
        sys.settrace(tracer)
        result = simulate(head, Scheduler, config, roofline, "reference", check=check)
        sys.settrace(None)
        counts.append(count[0] / len(result.step_tokens))
    print(f"{name} {len(result.step_tokens)} {counts[0]:.0f} {counts[1]:.0f}")
"""


def counted(package: Path, requests: int) -> list[str]:
    """The lines COUNT prints for the package laid out at `package` (first on the path, nothing else of ours)."""
    code = f"import sys; sys.path.insert(0, {str(package)!r}); exec({COUNT!r})"
    out = subprocess.run([sys.executable, "-I", "-c", code, str(requests)], capture_output=True, text=True, check=True)
    return out.stdout.split("\n")[:-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revs", nargs="*", default=["1e2414f", "main"], help="commits beside the working tree")
    parser.add_argument("--requests", type=int, default=1000, help="first requests of each trace (default 1000)")
    args = parser.parse_args()
    print(f"instructions a step, first {args.requests} requests of each trace: unchecked, checked")
    with tempfile.TemporaryDirectory(prefix="sim-instructions-") as folder:
        copies = [(rev, holdstage.stage_commit(holdstage.resolve(rev), Path(folder, rev))) for rev in args.revs]
        copies.append(("working tree", holdstage.stage_tree(Path(folder, "tree"))))
        for name, package in copies:
            for line in counted(package, args.requests):
                trace, steps, plain, checked = line.split()
                print(f"{name:>14}  {trace}  {steps} steps  {plain:>6}  {checked:>6}")


if __name__ == "__main__":
    main()
