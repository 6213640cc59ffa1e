"""check-trace throughput and memory: steps judged per second, streaming from a file, for a sparse
trace (one request decoding) and a dense one (16 requests running), each as v1 (the monitor) and as
the same lines under a v2 header (the engine checker), beside json.loads alone of the same lines in
the same repeat; and peak memory (tracemalloc) for a short and a long trace, and for N and 4N requests.
With `--base REV`, the checkers of that commit (its conformance/trace, read from git) judge the same
lines beside them in each repeat, and the ratio of the two speeds is printed (above 1: this tree is faster).

    python benchmarks/check_trace_throughput.py [--steps N] [--repeats R] [--versions 1,2] [--base REV]
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from oldcode import copy_package

from stallfree.conformance.trace.enginecheck import check_engine_trace
from stallfree.conformance.trace.record import record_trace
from stallfree.conformance.trace.synthetic import decoding_trace
from stallfree.conformance.trace.tracecheck import check_trace, read_lines
from stallfree.reference import Scheduler
from stallfree.spec import Arrival, Config, Workload

DENSE_SEQS = 16
CHECKERS: dict[int, Callable[..., Any]] = {1: check_trace, 2: check_engine_trace}


def dense_workload(num_steps: int) -> Workload:
    """Requests arriving steadily so that about 16 decode at once (the reference's own trace)."""
    num = max(1, num_steps // 3)
    return Workload(Config(64, DENSE_SEQS, 10**9), tuple(Arrival(i, 50, 40, i * 3) for i in range(num)))


def write(path: Path, lines: Iterator[bytes]) -> None:
    with path.open("wb") as out:
        out.writelines(lines)


def as_v2(v1: Path, v2: Path) -> None:
    """The same lines under a v2 header (a v1 step line is a valid v2 step line)."""
    header, rest = v1.read_bytes().split(b"\n", 1)
    data = json.loads(header)
    data["stallfree_trace"] = 2
    v2.write_bytes(json.dumps(data).encode() + b"\n" + rest)


def rate(path: Path, check: Callable[..., Any] | None) -> tuple[float, int, list[str]]:
    started = time.perf_counter()
    with path.open("rb") as stream:
        if check is None:
            steps, broken = sum(1 for line in read_lines(stream) if "step" in json.loads(line)), []
        else:
            verdict = check(read_lines(stream))
            steps = verdict.steps
            broken = sorted(getattr(verdict, "violations", None) or ([verdict.violation.rule] if verdict.violation
                                                                     else []))
    return steps / (time.perf_counter() - started), steps, broken


def peak(path: Path, check: Callable[..., Any]) -> int:
    tracemalloc.start()
    with path.open("rb") as stream:
        check(read_lines(stream))
    size = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return size


def base_checkers(rev: str, folder: Path) -> dict[int, Callable[..., Any]]:
    """The checkers of commit `rev`, as a package in `folder` (which must outlive their use: they import
    some of their modules as they run)."""
    copy_package(rev, "conformance/trace", folder / "base_trace")
    sys.path.insert(0, str(folder))
    return {1: importlib.import_module("base_trace.tracecheck").check_trace,
            2: importlib.import_module("base_trace.enginecheck").check_engine_trace}


def speeds(folder: Path, versions: list[int], repeats: int, base: dict[int, Callable[..., Any]] | None,
           rev: str | None) -> None:
    """Steps judged a second, beside json.loads of the same lines (and the base's checker) in each repeat."""
    for kind, what in (("sparse", "1 running"), ("dense", f"~{DENSE_SEQS} running")):
        for version in versions:
            path = folder / f"{kind}{version}.jsonl"
            full, parse, old = [], [], []
            for _ in range(repeats):  # side by side in each repeat, so load hits both alike
                parse.append(rate(path, None)[0])
                checked, steps, broken = rate(path, CHECKERS[version])
                full.append(checked)
                if base is not None:
                    old.append(rate(path, base[version])[0])
            ratio = statistics.median(p / f for p, f in zip(parse, full, strict=True))
            print(f"v{version} {kind} ({what}) {steps:>8} steps, {path.stat().st_size / 1e6:5.1f} MB: check "
                  f"{statistics.median(full):>9,.0f} steps/s; json.loads alone {statistics.median(parse):>9,.0f} "
                  f"lines/s; check takes {ratio:.2f}x json.loads (median of {repeats}); "
                  f"broken: {broken or 'none'}")
            if base is not None:
                gain = statistics.median(f / o for f, o in zip(full, old, strict=True))
                print(f"    base {rev}: check {statistics.median(old):>9,.0f} steps/s; this tree / base "
                      f"{gain:.2f}x (median of {repeats})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--versions", default="1,2", help="the trace versions to judge: 1, 2 or 1,2")
    parser.add_argument("--base", default=None, help="git revision whose checkers run beside these")
    args = parser.parse_args()
    versions = [int(v) for v in args.versions.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = base_checkers(args.base, folder) if args.base is not None else None
        write(folder / "sparse1.jsonl", decoding_trace(args.steps))
        with (folder / "dense1.jsonl").open("w") as out:
            record_trace(dense_workload(args.steps), Scheduler, out)
        for kind in ("sparse", "dense"):
            as_v2(folder / f"{kind}1.jsonl", folder / f"{kind}2.jsonl")
        speeds(folder, versions, args.repeats, base, args.base)
        short, long = folder / "short.jsonl", folder / "long.jsonl"
        write(short, decoding_trace(args.steps // 10))
        write(long, decoding_trace(args.steps))
        requests = max(1, args.steps // 30)
        few, many = folder / "few.jsonl", folder / "many.jsonl"
        for path, steps in ((few, requests * 3), (many, requests * 12)):
            with path.open("w") as out:
                record_trace(dense_workload(steps), Scheduler, out)
        for version in versions:
            check = CHECKERS[version]
            if version == 2:
                for path in (short, long, few, many):
                    as_v2(path, path)
            print(f"v{version} peak traced memory: {peak(short, check) / 1e3:.0f} kB for {args.steps // 10} steps, "
                  f"{peak(long, check) / 1e3:.0f} kB for {args.steps} steps (one request); "
                  f"{peak(few, check) / 1e3:.0f} kB for {requests} requests, "
                  f"{peak(many, check) / 1e3:.0f} kB for {requests * 4} requests (~{DENSE_SEQS} running)")


if __name__ == "__main__":
    main()
