"""The paged design's step path beside the reservation design's, on the tiny model, one rank, fp32:
milliseconds of a whole step, of its forward pass, and of the host's share (building the flat
batch and the block table, the real-path checks, recording the step), medians over the steps of a
run, both designs interleaved run by run in one process (the machine is shared and noisy).

    python benchmarks/executor_paged.py [--reps 5]

Workloads: the default one (four streams and a 400-token prompt) on 2,048 KV tokens (nothing
preempted) for both designs, and on 448 for the paged one (the long prompt preempted), and the
preempting example (docs/examples/preempting.json) on its 96 (paged) and on 160 (reservation: every
reservation fits at once).
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace

from stallfree.executor.engine.job import Job
from stallfree.executor.layers.group import Group
from stallfree.executor.runs.launch import run_local
from stallfree.executor.runs.runspec import RunSpec
from stallfree.executor.runs.workloads import long_prompt_amid_decodes, preempting
from stallfree.spec import Config, Workload, registry
from stallfree.spec.utils.loader import load_target

RESERVATION, PAGED = "stallfree.reference:Scheduler", "stallfree.paged:Scheduler"


def with_kv(workload: Workload, kv_tokens: int) -> Workload:
    c = workload.config
    return replace(workload, config=Config(c.token_budget, c.max_seqs, kv_tokens))


CASES = (
    ("default", RESERVATION, long_prompt_amid_decodes()),
    ("default", PAGED, long_prompt_amid_decodes()),
    ("default", PAGED, with_kv(long_prompt_amid_decodes(), 448)),
    ("preempting", RESERVATION, with_kv(preempting(), 160)),  # a reservation takes 44 a stream: all fit in 160
    ("preempting", PAGED, preempting()),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    spec = RunSpec((), tp=1, dtype="fp32")
    model = spec.build(Group())
    samples: dict[int, dict[str, list[float]]] = {i: {"step": [], "forward": [], "host": []} for i in range(len(CASES))}
    preemptions: dict[int, int] = {}
    for _ in range(args.reps):
        for i, (_, scheduler, workload) in enumerate(CASES):
            (result,) = run_local(RunSpec((Job(workload, scheduler),), tp=1, dtype="fp32"), model).results
            assert result.ok, result.violation
            busy = [s for s in result.steps if s.plan]
            samples[i]["step"].append(statistics.median(s.ms for s in busy))
            samples[i]["forward"].append(statistics.median(s.forward_ms for s in busy))
            samples[i]["host"].append(statistics.median(s.host_ms for s in busy))
            preemptions[i] = sum(len(s.preempted) for s in result.steps)
    print(f"{'workload':<18} {'design':<12} {'preempted':>9} {'step ms':>8} {'forward ms':>10} {'host ms':>8} "
          f"{'host %':>7}")
    for i, (base, scheduler, workload) in enumerate(CASES):
        name = f"{base}, K={workload.config.kv_tokens}"
        step, forward, host = (statistics.median(samples[i][k]) for k in ("step", "forward", "host"))
        design = registry.of(load_target(scheduler)).name
        print(f"{name:<18} {design:<12} {preemptions[i]:>9} {step:>8.2f} {forward:>10.2f} {host:>8.3f} "
              f"{100 * host / step:>6.1f}%")


if __name__ == "__main__":
    main()
