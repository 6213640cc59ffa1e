"""Step time against tokens in the step, on the CPU, through the real step path (monitor, checks).

Each step is one request's whole prompt of T tokens (prompt T, one token out, budget T, one cell),
so every step carries exactly T tokens from position 0. Prints, per model and tensor-parallel size:
the median step time and forward time per T, a least-squares line ms = a + b*T with its residuals,
the monitor's share of the step (target < 5%) and the real-path checks' share; then TP=N against
TP=1 side by side. Medians over --reps steps after one warm-up step.

    python benchmarks/executor_step.py                      # tiny and wide, TP 1 and 4
    python benchmarks/executor_step.py --models tiny --tp 1 --tokens 1,64,256

The machine is shared; run it twice and trust only what both runs agree on.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from stallfree.executor.engine.job import Job, JobResult
from stallfree.executor.runs.launch import launch
from stallfree.executor.runs.runspec import RunSpec
from stallfree.executor.runs.workloads import one_prompt_per_step


def prefill_job(tokens: int, reps: int) -> Job:
    """reps + 1 requests of `tokens` prompt tokens, one at a time: each step is one whole prompt."""
    return Job(one_prompt_per_step(tokens, reps), label=f"T={tokens}")


def medians(result: JobResult) -> dict[str, float]:
    steps = result.steps[1:]  # the first step warms up
    return {k: statistics.median(getattr(s, k) for s in steps) for k in ("ms", "forward_ms", "monitor_ms", "host_ms")}


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - b * mx, b


def measure(model: str, tp: int, dtype: str, token_counts: list[int], reps: int,
            threads: int) -> dict[int, dict[str, float]]:
    print(f"  {model} tp={tp}: launching ...", file=sys.stderr, flush=True)
    spec = RunSpec(tuple(prefill_job(t, reps) for t in token_counts), model=model, dtype=dtype, tp=tp)
    launched = launch(spec, timeout_s=3000, threads=threads)
    return {t: medians(r) for t, r in zip(token_counts, launched.results, strict=True)}


def report(model: str, tp: int, rows: dict[int, dict[str, float]]) -> None:
    ts = sorted(rows)
    a, b = fit([float(t) for t in ts], [rows[t]["ms"] for t in ts])
    print(f"\n{model}, tp={tp}: step ms = {a:.2f} + {b * 1e3:.3f} us/token x T")
    print(f"{'T':>6} {'step ms':>9} {'forward':>9} {'fit':>9} {'resid':>8} {'monitor %':>10} {'host %':>9}")
    for t in ts:
        r = rows[t]
        predicted = a + b * t
        print(f"{t:>6} {r['ms']:>9.2f} {r['forward_ms']:>9.2f} {predicted:>9.2f} {r['ms'] - predicted:>+8.2f} "
              f"{100 * r['monitor_ms'] / r['ms']:>9.2f}% {100 * r['host_ms'] / r['ms']:>8.2f}%")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="tiny,wide")
    p.add_argument("--tp", default="1,4", help="tensor-parallel sizes, compared against the first")
    p.add_argument("--tokens", default="1,64,256,1024,2048")
    p.add_argument("--dtype", default="fp8", choices=("fp8", "bf16", "fp32"))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads of a TP=1 run (in this process; each TP>1 rank always has 1)")
    args = p.parse_args()
    # One thread by default (see launch.run_local); --threads 2 measures an idle machine's best.
    token_counts = [int(t) for t in args.tokens.split(",")]
    sizes = [int(t) for t in args.tp.split(",")]
    for model in args.models.split(","):
        table = {tp: measure(model, tp, args.dtype, token_counts, args.reps, args.threads) for tp in sizes}
        for tp in sizes:
            report(model, tp, table[tp])
        base = sizes[0]
        for tp in sizes[1:]:
            print(f"\n{model}: tp={tp} against tp={base} (median step ms; ratio > 1 means tp={tp} is slower)")
            for t in token_counts:
                ratio = table[tp][t]["ms"] / table[base][t]["ms"]
                print(f"{t:>6} {table[base][t]['ms']:>9.2f} {table[tp][t]['ms']:>9.2f}  x{ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
