"""Wall time of the default `stallfree conform` run (60 configs x 25 examples) on vLLM's own V1
scheduler, live (stallfree.conformance.engines.vllm_adapter), with memory that never binds and with a
K-token block pool, side by side; and of the reference, for scale. Target: under 2 minutes each.
Run in the vLLM venv (scripts/vllm-venv.sh):

    .venv-vllm/bin/python benchmarks/conform_vllm.py [--examples N] [--repeats R]
"""

from __future__ import annotations

import argparse
import statistics
import time

from stallfree.conformance.kit import DEFAULT_EXAMPLES, NOT_APPLICABLE, PASS, conform

ADAPTER = "stallfree.conformance.engines.vllm_adapter"
TARGETS = (f"{ADAPTER}:VllmScheduler", f"{ADAPTER}:VllmKvScheduler", "stallfree.reference:Scheduler")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    times: dict[str, list[float]] = {t: [] for t in TARGETS}
    for _ in range(args.repeats):
        for target in TARGETS:
            started = time.perf_counter()
            report = conform(target, examples=args.examples)
            times[target].append(time.perf_counter() - started)
            held = sum(v == PASS for v in report.verdicts.values())
            na = sum(v == NOT_APPLICABLE for v in report.verdicts.values())
            broken = ", ".join(report.counterexamples) or "none"
            print(f"{target.rsplit(':', 1)[1]:<16} {times[target][-1]:6.1f} s  {report.runs:>5} runs  "
                  f"{report.steps:>6} steps  {held} held, {na} not applicable, {len(report.refused)} configs refused; "
                  f"broken: {broken}", flush=True)
    for target in TARGETS:
        name = target.rsplit(":", 1)[1]
        print(f"median {name:<16} {statistics.median(times[target]):6.1f} s over {args.repeats} run(s)")


if __name__ == "__main__":
    main()
