"""The v1 checker's memory is bounded by what is live (issue 31, item 7): its monitor's record of ended
requests is `conformance/trace/endings.py` (rids kept as runs per reason), so judging 4N requests takes
about the memory of N; an ended rid is still known however long ago it ended (planned again it breaks
TOKENS, or CANCEL if it was cancelled; added again it may be accepted). Negative control: the monitor's
own dict of every ended rid is caught growing."""

from __future__ import annotations

import io
import json
import sys
import tracemalloc
from pathlib import Path

import pytest

from stallfree.conformance.trace import tracecheck
from stallfree.conformance.trace.ended import RECENT, EndedRids
from stallfree.conformance.trace.endings import Endings
from stallfree.conformance.trace.record import record_trace
from stallfree.conformance.trace.tracecheck import check_trace
from stallfree.reference import Scheduler
from stallfree.spec.ending import Ending, Reason

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
from check_trace_throughput import dense_workload

REQUESTS = 600  # N; the long trace has 4N


def dense_v1(requests: int) -> list[str]:
    out = io.StringIO()
    record_trace(dense_workload(requests * 3), Scheduler, out)
    return out.getvalue().splitlines()


def peak(lines: list[str]) -> int:
    tracemalloc.start()
    try:
        assert check_trace(iter(lines)).ok
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_is_flat_in_the_number_of_requests() -> None:
    few, many = dense_v1(REQUESTS), dense_v1(4 * REQUESTS)
    peak(few)  # warm: first-use allocations out of the comparison
    small, large = peak(few), peak(many)
    assert large < 1.25 * small + 20_000, (small, large)


def test_a_record_per_ended_rid_is_caught_growing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracecheck, "Endings", dict)  # the monitor's own record: rid -> Ending
    few, many = dense_v1(REQUESTS), dense_v1(4 * REQUESTS)
    peak(few)
    small, large = peak(few), peak(many)
    assert large > 1.25 * small + 20_000, (small, large)


def test_endings_answer_as_the_dict_they_replace() -> None:
    endings, every = Endings(), {}
    reasons = list(Reason)
    for rid in range(3 * RECENT):
        ending = Ending(rid // 2, reasons[rid % 7 % 3])
        endings[rid] = every[rid] = ending
    for rid in range(3 * RECENT + 5):
        found, kept = endings.get(rid), every.get(rid)
        assert (rid in endings) == (kept is not None)
        assert found == kept or (found is not None and kept is not None and found.step is None
                                 and found.reason is kept.reason and rid < 2 * RECENT)
    assert endings.pop(10) == every.pop(10) or endings.get(10) is None
    assert 10 not in endings and 11 in endings
    endings[10] = Ending(99, Reason.STOP)
    assert endings.get(10) == Ending(99, Reason.STOP)


def test_a_discarded_rid_splits_its_run() -> None:
    ended = EndedRids()
    for rid in range(10):
        ended.add(rid, rid)
    assert ended.runs == 1
    ended.discard(4)
    assert 4 not in ended and 3 in ended and 5 in ended and ended.runs == 2
    ended.discard(0)
    ended.discard(9)
    assert ended.runs == 2 and 0 not in ended and 9 not in ended and 1 in ended and 8 in ended
    ended.add(4, 20)
    assert ended.runs == 1 and ended.when(4) == "at step 20"


def test_a_rid_long_ended_is_still_ended() -> None:
    lines = dense_v1(RECENT + 200)
    last = len(lines) - 2  # the last step line
    data = json.loads(lines[last])
    data["plan"] = [*data["plan"], [1, 1]]  # rid 1 finished more than RECENT requests ago
    lines[last] = json.dumps(data)
    verdict = check_trace(lines)
    assert verdict.violation is not None and verdict.violation.rule == "TOKENS"
    assert verdict.violation.message == ("plan names rid 1, which finished long ago (its step is no longer kept) "
                                         "after emitting all its max_new tokens")
    data["plan"].pop()
    data["add"] = [[1, 50, 40]]  # an ended request's rid: the engine may accept it again
    lines[last] = json.dumps(data)
    verdict = check_trace(lines)
    assert verdict.violation is not None and verdict.violation.rule == "WORK-CONSERVING"  # accepted, then left waiting
    assert "waiting rid 1 fits" in verdict.violation.message
