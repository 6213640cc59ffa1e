"""check-trace memory with the ended rids kept three ways, side by side: peak traced memory (tracemalloc)
of both checkers over N and 4N requests, for rids numbered with gaps (issue 31, item 7); and the speed of
checking with the runs and with progressions, interleaved in each repeat (medians, and their ratio).

The ended rids are kept as a plain set (`tests/ended_before.py:PlainEndedRids`, the checkers first), as
runs of consecutive ints (`RunEndedRids`, the record before progressions) and as progressions
(`conformance/trace/ended.py:EndedRids`, now). The traces are the reference's dense trace (about 16
requests running) with its rids numbered three ways:

- every other: each accepted request is followed by one that can never fit (refused), so the accepted
  rids are 0, 2, 4, ... (v1 and v2);
- one rank's share: rid 4i + 1, as one of 4 data-parallel ranks sees them (v1 and v2);
- "req-i" strings, as engines name requests (v2 only: a v1 rid is an int).

The speed is measured on the same traces and on the dense trace with consecutive rids (the common case).

    python benchmarks/ended_memory.py [--requests N] [--speed-requests M] [--repeats R]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

from stallfree.conformance.trace import endings, enginecheck
from stallfree.conformance.trace.ended import EndedRids
from stallfree.conformance.trace.enginecheck import check_engine_trace
from stallfree.conformance.trace.record import record_trace
from stallfree.conformance.trace.tracecheck import check_trace
from stallfree.reference import Scheduler
from stallfree.spec import Arrival, Config, Workload

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from ended_before import PlainEndedRids, RunEndedRids

NEVER_FITS = 10**9  # a refused request's prompt_len: above K
RECORDS: dict[str, type] = {"plain set": PlainEndedRids, "runs": RunEndedRids, "progressions": EndedRids}
ONE_KEYS = ("emitted", "finished", "stop", "cancel", "cancel_pending")  # lists of rids
FIRST_KEYS = ("add", "refuse", "plan")  # lists of entries, each with its rid first


def recorded(arrivals: list[Arrival], version: int) -> list[str]:
    """The reference's trace of `arrivals` (K = 10**9, B = 64, 16 sequences), under a `version` header."""
    out = io.StringIO()
    record_trace(Workload(Config(64, 16, NEVER_FITS), tuple(arrivals)), Scheduler, out)
    lines = out.getvalue().splitlines()
    header = json.loads(lines[0])
    header["stallfree_trace"] = version
    return [json.dumps(header), *lines[1:]]


def every_other(requests: int, version: int) -> list[str]:
    """Rids 2i accepted, each followed by rid 2i + 1, refused."""
    arrivals = []
    for i in range(requests):
        arrivals += [Arrival(2 * i, 50, 40, i * 3), Arrival(2 * i + 1, NEVER_FITS, 40, i * 3)]
    return recorded(arrivals, version)


def ranks_share(requests: int, version: int) -> list[str]:
    """Rids 4i + 1: the requests one of 4 data-parallel ranks serves."""
    return recorded([Arrival(4 * i + 1, 50, 40, i * 3) for i in range(requests)], version)


def named(requests: int, version: int) -> list[str]:
    """Rids "req-i" (a v2 trace)."""
    lines = recorded([Arrival(i, 50, 40, i * 3) for i in range(requests)], version)
    return [lines[0], *(renamed(line, lambda rid: f"req-{rid}") for line in lines[1:])]


def renamed(line: str, name: Callable[[int], str]) -> str:
    data = json.loads(line)
    for key in ONE_KEYS:
        if key in data:
            data[key] = [name(rid) for rid in data[key]]
    for key in FIRST_KEYS:
        if key in data:
            data[key] = [[name(entry[0]), *entry[1:]] for entry in data[key]]
    return json.dumps(data)


TRACES: dict[str, tuple[Callable[[int, int], list[str]], tuple[int, ...]]] = {
    "every other rid": (every_other, (1, 2)),
    "one rank's share (4i + 1)": (ranks_share, (1, 2)),
    '"req-i" strings': (named, (2,)),
}


def consecutive(requests: int, version: int) -> list[str]:
    """Rids 0, 1, 2, ...: the dense trace of the throughput benchmark."""
    return recorded([Arrival(i, 50, 40, i * 3) for i in range(requests)], version)


def judged(lines: list[str], version: int, record: type) -> None:
    """Judge `lines` with the ended rids kept in `record`; the trace must hold."""
    saved = endings.EndedRids, enginecheck.EndedRids
    endings.EndedRids = enginecheck.EndedRids = record  # type: ignore[misc]
    try:
        verdict = check_trace(iter(lines)) if version == 1 else check_engine_trace(iter(lines))
        assert verdict.ok, verdict
    finally:
        endings.EndedRids, enginecheck.EndedRids = saved  # type: ignore[misc]


def peak(lines: list[str], version: int, record: type) -> int:
    """Peak traced memory of judging `lines` with the ended rids kept in `record`; the trace must hold."""
    tracemalloc.start()
    try:
        judged(lines, version, record)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def speeds(lines: list[str], version: int, repeats: int) -> tuple[float, float, float]:
    """Median lines judged per second with the runs and with progressions, timed one after the other in
    each repeat (so that load hits both alike), and the median of their ratio (progressions / runs)."""
    rates: dict[type, list[float]] = {RunEndedRids: [], EndedRids: []}
    for _ in range(repeats):
        for record, got in rates.items():
            started = time.perf_counter()
            judged(lines, version, record)
            got.append(len(lines) / (time.perf_counter() - started))
    old, new = rates[RunEndedRids], rates[EndedRids]
    return (
        statistics.median(old),
        statistics.median(new),
        statistics.median(b / a for a, b in zip(old, new, strict=True)),
    )


def rows(requests: int) -> Iterator[tuple[str, int, dict[str, tuple[int, int]]]]:
    """(trace, version, record -> (peak for N, peak for 4N)) for every trace and version."""
    for trace, (make, versions) in TRACES.items():
        for version in versions:
            few, many = make(requests, version), make(4 * requests, version)
            peak(few, version, EndedRids)  # warm: first-use allocations out of the comparison
            yield (
                trace,
                version,
                {name: (peak(few, version, record), peak(many, version, record)) for name, record in RECORDS.items()},
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600, help="N: the long traces have 4N")
    parser.add_argument("--speed-requests", type=int, default=10_000, help="M: the traces timed have M")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n = args.requests
    print(f"peak traced memory, kB, N = {n} and 4N = {4 * n} requests; each cell: N -> 4N")
    print(f"{'trace':<28} {'v':>2} " + " ".join(f"{name:>18}" for name in RECORDS))
    for trace, version, peaks in rows(n):
        cells = " ".join(f"{f'{a / 1e3:.0f} -> {b / 1e3:.0f}':>18}" for a, b in peaks.values())
        print(f"{trace:<28} {version:>2} {cells}")
    print(f"lines judged per second, {args.speed_requests} requests, median of {args.repeats}, interleaved")
    print(f"{'trace':<28} {'v':>2} {'runs':>10} {'progressions':>13} {'ratio':>6}")
    timed = {"consecutive (dense)": (consecutive, (1, 2)), **TRACES}
    for trace, (make, versions) in timed.items():
        for version in versions:
            old, new, ratio = speeds(make(args.speed_requests, version), version, args.repeats)
            print(f"{trace:<28} {version:>2} {old:>10,.0f} {new:>13,.0f} {ratio:>6.3f}")


if __name__ == "__main__":
    main()
