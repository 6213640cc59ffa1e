"""Wall time and verdicts of the default `stallfree conform` run (60 configs x 25 examples) on vLLM's
own V1 scheduler, live, under the paged profile (`vllm_paged:VllmPagedScheduler`, preemption judged)
and the prefix profile (`vllm_prefix:VllmPrefixScheduler`, automatic prefix caching on). Run in the
vLLM venv (scripts/vllm-venv.sh):

    .venv-vllm/bin/python benchmarks/conform_vllm_designs.py [--examples N] [--repeats R]
"""

from __future__ import annotations

import argparse
import statistics
import time

from stallfree.conformance.kit import NOT_APPLICABLE, PASS, conform

ENGINES = "stallfree.conformance.engines"
TARGETS = ((f"{ENGINES}.vllm_paged:VllmPagedScheduler", "paged"),
           (f"{ENGINES}.vllm_prefix:VllmPrefixScheduler", "prefix"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    times: dict[str, list[float]] = {t: [] for t, _ in TARGETS}
    for _ in range(args.repeats):
        for target, profile in TARGETS:
            started = time.perf_counter()
            report = conform(target, profile=profile, examples=args.examples)
            times[target].append(time.perf_counter() - started)
            held = sum(v == PASS for v in report.verdicts.values())
            na = sum(v == NOT_APPLICABLE for v in report.verdicts.values())
            name = target.rsplit(":", 1)[1]
            print(f"{name:<22} --profile {profile:<7} {times[target][-1]:6.1f} s  {report.runs:>5} "
                  f"runs {report.steps:>6} steps  {held} held, {na} not applicable; broken: "
                  f"{', '.join(report.counterexamples) or 'none'}", flush=True)
    for target, _ in TARGETS:
        median = statistics.median(times[target])
        print(f"median {target.rsplit(':', 1)[1]:<22} {median:6.1f} s over {args.repeats} run(s)")


if __name__ == "__main__":
    main()
