"""The reference's behaviour against an older commit's: the same random workloads through both, every
call's result, error and view digested; the digests must be equal (a check, not a timing).

Each workload draws a config (small, where the budget runs out and prompts are chunked; or larger),
then 60 steps of: adds (new rids, rids taken or ended and re-added, lengths that are refused), cancels
before and while a plan is pending, schedule() and a second schedule() (refused), stops (some naming
a rid that emitted nothing, refused, then complete() without them), and after each step the views
(waiting, running, free KV, ended, num_steps, is_idle) and progress() of every rid drawn so far. Each
copy runs in a process of its own with only that copy on the path (`holdstage`).

    python benchmarks/reference_differential.py --base main --workloads 2000
    python benchmarks/reference_differential.py --base main --control SkipsTheOldestPartial  # must differ
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import holdstage

WORKLOADS = r"""
import hashlib, random, sys
from stallfree.reference import Scheduler
if sys.argv[2]:
    from stallfree.proofs.smt import code_fold_planted
    Scheduler = getattr(code_fold_planted, sys.argv[2])

def said(call, *args):
    try:
        return ("ok", call(*args))
    except Exception as error:
        return (type(error).__name__, str(error))

def views(s, rids):
    return (s.waiting, s.running, s.free_kv, s.ended, s.num_steps, s.is_idle,
            tuple(repr(said(s.progress, rid)) for rid in range(rids + 1)))

def workload(seed):
    r = random.Random(seed)
    small = (r.randint(1, 12), r.randint(1, 4), r.randint(4, 40))
    large = (r.randint(8, 64), r.randint(2, 12), r.randint(40, 400))
    s, rids, out = Scheduler(*r.choice([small, large])), 0, []
    for _ in range(60):
        for _ in range(r.randint(0, 2)):
            rid = r.choice([rids, r.randint(0, rids)])
            rids += 1
            out.append(("add", rid, said(s.add, rid, r.randint(0, 20), r.randint(0, 6))))
        if r.random() < 0.2:
            out.append(("cancel", said(s.cancel, r.randint(0, rids))))
        plan = s.schedule()
        out.append(("plan", plan, said(s.schedule)))
        if r.random() < 0.2:
            out.append(("cancel pending", said(s.cancel, r.randint(0, rids))))
        stopped = [e.rid for e in plan.entries if r.random() < 0.15]
        done = said(s.complete, plan, stopped)
        out.append(("complete", done, said(s.complete, plan) if done[0] != "ok" else None))
        out.append(("views", views(s, rids)))
    return repr(out)

digest = hashlib.sha256()
for seed in range(int(sys.argv[1])):
    digest.update(workload(seed).encode())
print(digest.hexdigest())
"""


def digest(package: Path, workloads: int, control: str = "") -> str:
    """The digest of `workloads` workloads through the reference of the package laid out at `package`."""
    code = f"import sys; sys.path.insert(0, {str(package)!r}); exec({WORKLOADS!r})"
    out = subprocess.run([sys.executable, "-I", "-c", code, str(workloads), control], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="the commit whose reference is the baseline")
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--control", default="", help="a class of the working tree's code_fold_planted to run "
                        "in place of its reference (a negative control: its digest must differ)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reference-differential-") as folder:
        base = holdstage.stage_commit(holdstage.resolve(args.base), Path(folder, "base"))
        tree = holdstage.stage_tree(Path(folder, "tree"))
        theirs, ours = digest(base, args.workloads), digest(tree, args.workloads, args.control)
    print(f"{args.workloads} workloads: {args.base} {theirs}")
    print(f"{args.workloads} workloads: {args.control or 'working tree'} {ours}")
    print("same" if theirs == ours else "DIFFERENT")
    raise SystemExit(0 if theirs == ours else 1)


if __name__ == "__main__":
    main()
