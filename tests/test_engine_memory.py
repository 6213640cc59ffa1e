"""The engine checker's memory is bounded by what is live (issue 31, item 7): the rids of ended
requests are kept as runs (`conformance/trace/ended.py`), so judging 4N requests takes about the
memory of N; an ended rid is still known however long ago it ended (a rid added again is NEVER-FIT,
one planned again TOKENS), and a dict of every ended rid (the checker before) is caught growing."""

from __future__ import annotations

import io
import json
import random
import sys
import tracemalloc
from pathlib import Path

import pytest

from stallfree.conformance.trace import enginecheck
from stallfree.conformance.trace.ended import RECENT, EndedRids
from stallfree.conformance.trace.enginecheck import check_engine_trace
from stallfree.conformance.trace.record import record_trace
from stallfree.reference import Scheduler

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
from check_trace_throughput import dense_workload

REQUESTS = 600  # N; the long trace has 4N


def dense_v2(requests: int) -> list[str]:
    out = io.StringIO()
    record_trace(dense_workload(requests * 3), Scheduler, out)
    lines = out.getvalue().splitlines()
    header = json.loads(lines[0])
    header["stallfree_trace"] = 2
    return [json.dumps(header), *lines[1:]]


def peak(lines: list[str]) -> int:
    tracemalloc.start()
    try:
        assert check_engine_trace(iter(lines)).ok
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


class EveryRid(dict):  # type: ignore[type-arg]
    """What the checker kept before: a record per ended rid."""

    def add(self, rid: object, step: int) -> None:
        self[rid] = step

    def when(self, rid: object) -> str:
        return f"at step {self[rid]}"


def test_memory_is_flat_in_the_number_of_requests() -> None:
    few, many = dense_v2(REQUESTS), dense_v2(4 * REQUESTS)
    peak(few)  # warm: first-use allocations out of the comparison
    small, large = peak(few), peak(many)
    assert large < 1.25 * small + 20_000, (small, large)


def test_a_record_per_ended_rid_is_caught_growing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(enginecheck, "EndedRids", EveryRid)
    few, many = dense_v2(REQUESTS), dense_v2(4 * REQUESTS)
    peak(few)
    small, large = peak(few), peak(many)
    assert large > 1.25 * small + 20_000, (small, large)


def test_ended_rids_in_any_order_are_known_and_kept_as_runs() -> None:
    rng = random.Random(31)
    rids = list(range(5000))
    for start in range(0, 5000, 50):  # each block of 50 ends in shuffled order, as requests end near arrival
        block = rids[start:start + 50]
        rng.shuffle(block)
        rids[start:start + 50] = block
    ended = EndedRids()
    for i, rid in enumerate(rids):
        ended.add(rid, i)
        assert rid in ended
        assert ended.runs <= 50
    assert all(rid in ended for rid in range(5000)) and 5000 not in ended and -1 not in ended
    assert ended.runs == 1
    ended.add("a", 1)
    assert "a" in ended and "b" not in ended and ended.runs == 2
    assert ended.when("a") == "at step 1" and "not kept" in ended.when(0)


def test_a_rid_long_ended_is_still_taken_and_still_ended() -> None:
    lines = dense_v2(RECENT + 200)
    last = len(lines) - 2  # the last step line
    data = json.loads(lines[last])
    data["add"] = [*data.get("add", []), [0, 50, 40]]  # rid 0 ended more than RECENT requests ago
    lines[last] = json.dumps(data)
    verdict = check_engine_trace(lines)
    assert "NEVER-FIT" in verdict.violations
    assert "rid 0 is taken" in verdict.violations["NEVER-FIT"][0].message
    data.pop("add")
    data["plan"] = [*data["plan"], [1, 1]]
    lines[last] = json.dumps(data)
    verdict = check_engine_trace(lines)
    assert "TOKENS" in verdict.violations
    assert "plan names rid 1, which finished (more than" in verdict.violations["TOKENS"][0].message
