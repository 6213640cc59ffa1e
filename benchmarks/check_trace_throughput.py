"""check-trace throughput and memory: steps judged per second, streaming from a file, for a sparse
trace (one request decoding) and a dense one (16 requests running), beside json.loads alone;
and peak memory (tracemalloc) for a short and a long trace.

    python benchmarks/check_trace_throughput.py [--steps N] [--repeats R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

from stallfree.conformance.trace.record import record_trace
from stallfree.conformance.trace.synthetic import decoding_trace
from stallfree.conformance.trace.tracecheck import check_trace, read_lines
from stallfree.reference import Scheduler
from stallfree.spec import Arrival, Config, Workload

DENSE_SEQS = 16


def dense_workload(num_steps: int) -> Workload:
    """Requests arriving steadily so that about 16 decode at once (the reference's own trace)."""
    num = max(1, num_steps // 3)
    return Workload(Config(64, DENSE_SEQS, 10**9), tuple(Arrival(i, 50, 40, i * 3) for i in range(num)))


def write(path: Path, lines: Iterator[bytes]) -> None:
    with path.open("wb") as out:
        out.writelines(lines)


def rate(path: Path, parse_only: bool) -> tuple[float, int]:
    started = time.perf_counter()
    with path.open("rb") as stream:
        if parse_only:
            steps = sum(1 for line in read_lines(stream) if "step" in json.loads(line))
        else:
            steps = check_trace(read_lines(stream)).steps
    return steps / (time.perf_counter() - started), steps


def peak(path: Path) -> int:
    tracemalloc.start()
    with path.open("rb") as stream:
        check_trace(read_lines(stream))
    size = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sparse, dense = Path(tmp) / "sparse.jsonl", Path(tmp) / "dense.jsonl"
        write(sparse, decoding_trace(args.steps))
        with dense.open("w") as out:
            record_trace(dense_workload(args.steps), Scheduler, out)
        for name, path in (("sparse (1 running)", sparse), (f"dense (~{DENSE_SEQS} running)", dense)):
            full, parse = [], []
            for _ in range(args.repeats):  # side by side in each repeat, so load hits both alike
                parse.append(rate(path, parse_only=True)[0])
                checked, steps = rate(path, parse_only=False)
                full.append(checked)
            print(f"{name:<22} {steps:>8} steps, {path.stat().st_size / 1e6:6.1f} MB: check-trace "
                  f"{statistics.median(full):>9,.0f} steps/s; json.loads alone {statistics.median(parse):>9,.0f} "
                  f"lines/s (median of {args.repeats})")
        short, long = Path(tmp) / "short.jsonl", Path(tmp) / "long.jsonl"
        write(short, decoding_trace(args.steps // 10))
        write(long, decoding_trace(args.steps))
        print(f"peak traced memory: {peak(short) / 1e3:.0f} kB for {args.steps // 10} steps, "
              f"{peak(long) / 1e3:.0f} kB for {args.steps} steps")


if __name__ == "__main__":
    main()
