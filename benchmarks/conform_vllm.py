"""Wall time of the default `stallfree conform` run (60 configs x 25 examples) on vLLM's own V1
scheduler, live (stallfree.conformance.engines.vllm_adapter), with memory that never binds and with a
K-token block pool, side by side; and of the reference, for scale. Target: under 2 minutes each.
Run in the vLLM venv (scripts/vllm-venv.sh):

    .venv-vllm/bin/python benchmarks/conform_vllm.py [--examples N] [--repeats R]
"""

from __future__ import annotations

from conformtiming import arguments, time_conform

from stallfree.conformance.kit import NOT_APPLICABLE, PASS

ADAPTER = "stallfree.conformance.engines.vllm_adapter"
TARGETS = (f"{ADAPTER}:VllmScheduler", f"{ADAPTER}:VllmKvScheduler", "stallfree.reference:Scheduler")


def describe(report) -> str:  # type: ignore[no-untyped-def]
    held = sum(v == PASS for v in report.verdicts.values())
    na = sum(v == NOT_APPLICABLE for v in report.verdicts.values())
    broken = ", ".join(report.counterexamples) or "none"
    return (f"{report.runs:>5} runs  {report.steps:>6} steps  {held} held, {na} not applicable, "
            f"{len(report.refused)} configs refused; broken: {broken}")


def main() -> None:
    time_conform(TARGETS, arguments(__doc__), describe, lambda target: target.rsplit(":", 1)[1], 16)


if __name__ == "__main__":
    main()
