"""The executor's results on eight tiny-model jobs, timings left out, as JSON: run it on two trees and
compare the files to show that a change to the step path or the run loop kept behaviour field for field.

    python benchmarks/executor_results.py > head.json
    git worktree add /tmp/base fd5f7fe && PYTHONPATH=/tmp/base/src python benchmarks/executor_results.py > base.json
    cmp base.json head.json

The jobs: plain, a stop token, a replayed stop, cancels (before a step, of a waiting request, of a rid
not yet added, after the run), two schedulers that mishandle ends with the monitor silenced, and the
paged design preempting, with and without a stop and a cancel. Each result: every step's plan, tokens,
emitted and finished rids, free KV, sampled tokens and preemptions; each request's prompt, outputs,
arrival, admission, emission steps, end, cells and preemptions; the refused rids, the cancels as
offered, the violation.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from stallfree.executor.engine import job as job_module
from stallfree.executor.engine.job import Job, JobResult
from stallfree.executor.layers.group import Group
from stallfree.executor.runs.launch import run_local
from stallfree.executor.runs.runspec import RunSpec
from stallfree.executor.runs.workloads import preempting
from stallfree.spec import Arrival, Config, Workload

STOP = 1175  # a token rid 1 samples early on the tiny model, greedy, seed 0
TIGHT = Workload(Config(8, 4, 64), (Arrival(0, 10, 20, 0), Arrival(1, 6, 20, 0), Arrival(2, 12, 8, 1),
                                     Arrival(3, 5, 6, 2), Arrival(4, 100, 2, 3)))  # rid 4 never fits
ROOMY = Workload(Config(8, 4, 128), TIGHT.requests)


def cancels(*pairs: tuple[int, int]) -> tuple[Any, ...]:
    """(rid, step) pairs as the tree's Job takes them: `Cancel`s, or the bare pairs of older trees."""
    if "Cancel" not in inspect.getsource(job_module.Job):
        return pairs
    from stallfree.spec import Cancel

    return tuple(Cancel(rid, step) for rid, step in pairs)


def jobs() -> list[Job]:
    paged = preempting()
    return [
        Job(TIGHT, label="plain"),
        Job(TIGHT, stop_token=STOP, label="stop"),
        Job(TIGHT, stop_after=((1, 2),), label="stop-after"),
        Job(TIGHT, stop_token=STOP, cancels=cancels((0, 6), (5, 1), (2, 3), (3, 40)), label="cancels"),
        Job(ROOMY, "stallfree.faults.lifecycle:PlansCancelled", (), cancels=cancels((0, 3)), label="plans-cancelled"),
        Job(ROOMY, "stallfree.faults.lifecycle:DecodesAfterStop", (), stop_token=STOP, label="decodes-after-stop"),
        Job(paged, "stallfree.paged:Scheduler", label="paged"),
        Job(paged, "stallfree.paged:Scheduler", stop_token=STOP, cancels=cancels((2, 16)), label="paged-ends"),
    ]


def untimed(r: JobResult) -> dict[str, Any]:
    return {
        "label": r.label, "design": r.design, "violation": r.violation, "refused": r.refused,
        "cancels": r.cancels, "cancelled_silent": r.cancelled_silent,
        "steps": [(s.step, s.plan, s.num_tokens, s.emitted, s.finished, s.free_kv, s.tokens, s.preempted)
                  for s in r.steps],
        "requests": {rid: (q.prompt, q.outputs, q.arrival_step, q.admitted_at, q.emitted_at, q.finish_reason,
                           q.cells, q.num_preemptions) for rid, q in sorted(r.requests.items())},
    }


def main() -> None:
    spec = RunSpec(tuple(jobs()), tp=1, dtype="fp32")
    results = run_local(spec, spec.build(Group())).results
    print(json.dumps([untimed(r) for r in results], sort_keys=True, default=str, indent=0))


if __name__ == "__main__":
    main()
