"""Bytecode instructions a step of `simulate` executes (sys.settrace with f_trace_opcodes: deterministic, unlike
CPU time on a shared machine), unchecked and checked, on older commits and the working tree, each laid out as the
installed package and run in a process of its own (`holdstage`).

    python benchmarks/sim_instructions.py                      # 1e2414f, main and the working tree, 1,000 requests
    python benchmarks/sim_instructions.py --revs main --requests 3000
    python benchmarks/sim_instructions.py --by-function      # unchecked, the reference's own calls a step
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


# Unchecked, the instructions a step spent in each function of the reference and in `Plan`'s construction.
BY_FUNCTION = r"""
import sys
from collections import Counter
from stallfree import costs
from stallfree.sim.trace import Trace, load
from stallfree.sim.simulator import simulate
from stallfree.spec import Config
from stallfree.reference import Scheduler
dep = costs.Deployment(costs.model("llama-3.3-70b"), costs.gpu("h100-sxm"), 4, "fp8")
roofline, config = costs.Roofline(dep, "full"), Config(2048, 256, dep.kv_tokens)
for name in ("conv", "code"):
    head = Trace(name, load(name).requests[:int(sys.argv[1])])
    count = Counter()
    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            if "/reference/" in code.co_filename or code.co_qualname.startswith("Plan."):
                count[code.co_qualname] += 1
        return tracer
    sys.settrace(tracer)
    result = simulate(head, Scheduler, config, roofline, "reference")
    sys.settrace(None)
    steps = len(result.step_tokens)
    print(" ".join(f"{name}:{qualname}:{n / steps:.1f}" for qualname, n in count.most_common(8)))
"""


def counted(package: Path, requests: int, script: str = COUNT) -> list[str]:
    """The lines `script` prints for the package laid out at `package` (first on the path, nothing else of ours)."""
    code = f"import sys; sys.path.insert(0, {str(package)!r}); exec({script!r})"
    out = subprocess.run([sys.executable, "-I", "-c", code, str(requests)], capture_output=True, text=True, check=True)
    return out.stdout.split("\n")[:-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revs", nargs="*", default=["1e2414f", "main"], help="commits beside the working tree")
    parser.add_argument("--requests", type=int, default=1000, help="first requests of each trace (default 1000)")
    parser.add_argument("--by-function", action="store_true",
                        help="unchecked: the instructions a step in each of the reference's functions and Plan's")
    args = parser.parse_args()
    if args.by_function:
        return by_function(args.revs, args.requests)
    print(f"instructions a step, first {args.requests} requests of each trace: unchecked, checked")
    with tempfile.TemporaryDirectory(prefix="sim-instructions-") as folder:
        copies = [(rev, holdstage.stage_commit(holdstage.resolve(rev), Path(folder, rev))) for rev in args.revs]
        copies.append(("working tree", holdstage.stage_tree(Path(folder, "tree"))))
        for name, package in copies:
            for line in counted(package, args.requests):
                trace, steps, plain, checked = line.split()
                print(f"{name:>14}  {trace}  {steps} steps  {plain:>6}  {checked:>6}")


def by_function(revs: list[str], requests: int) -> None:
    """Print, for each copy, each trace's instructions a step in the reference's functions (the most first)."""
    print(f"unchecked, instructions a step in each function, first {requests} requests of each trace")
    with tempfile.TemporaryDirectory(prefix="sim-instructions-") as folder:
        copies = [(rev, holdstage.stage_commit(holdstage.resolve(rev), Path(folder, rev))) for rev in revs]
        copies.append(("working tree", holdstage.stage_tree(Path(folder, "tree"))))
        for name, package in copies:
            for line in counted(package, requests, BY_FUNCTION):
                for item in line.split():
                    trace, qualname, n = item.split(":")
                    print(f"{name:>14}  {trace}  {qualname:<34} {n:>6}")


if __name__ == "__main__":
    main()
