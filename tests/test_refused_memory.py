"""Both trace checkers keep the rids of refused requests in memory that does not grow with the refusals
(issue 31, item 7): `conformance/trace/refused.py` keeps them as runs reaching over the accepted rids
beside them. With the accepted requests fixed and 4x the refusals (each accepted request followed by 1,
then 4, requests too large for K), the peak is flat; the set of every refused rid (the checkers before)
is caught growing. A refused rid planned, however long ago it was refused, still breaks NEVER-FIT with
the same message, and a rid never offered is still PROTOCOL's "never added"."""

from __future__ import annotations

import io
import json
import random
import tracemalloc
from collections.abc import Callable

import pytest

from stallfree.conformance.trace import enginecheck, tracecheck
from stallfree.conformance.trace.enginecheck import check_engine_trace
from stallfree.conformance.trace.record import record_trace
from stallfree.conformance.trace.refused import RefusedRids
from stallfree.conformance.trace.tracecheck import check_trace
from stallfree.reference import Scheduler
from stallfree.spec import Arrival, Config, Workload

ACCEPTED = 600  # accepted requests in every trace; the refusals grow 4x around them
K = 10**9
NEVER_FIT = ("NEVER-FIT", "rid 1 was refused by add() yet is planned")


def refusing_trace(refused_each: int, version: int) -> list[str]:
    """The reference's dense trace of ACCEPTED requests, each followed by `refused_each` requests that can
    never fit (prompt_len = K): rid i * (refused_each + 1) accepted, the rids after it refused."""
    arrivals = []
    for i in range(ACCEPTED):
        rid = i * (refused_each + 1)
        arrivals.append(Arrival(rid, 50, 40, i * 3))
        arrivals += [Arrival(rid + j, K, 40, i * 3) for j in range(1, refused_each + 1)]
    out = io.StringIO()
    record_trace(Workload(Config(64, 16, K), tuple(arrivals)), Scheduler, out)
    lines = out.getvalue().splitlines()
    header = json.loads(lines[0])
    header["stallfree_trace"] = version
    return [json.dumps(header), *lines[1:]]


def judge(lines: list[str], version: int) -> tuple[str, str] | None:
    """The first broken rule and its message (v1: the verdict's; v2: PROTOCOL or NEVER-FIT's), or None."""
    if version == 1:
        first = check_trace(iter(lines)).violation
    else:
        violations = check_engine_trace(iter(lines)).violations
        first = next((violations[r][0] for r in ("PROTOCOL", "NEVER-FIT") if r in violations), None)
    return None if first is None else (first.rule, first.message)


def peak(lines: list[str], version: int) -> int:
    tracemalloc.start()
    try:
        assert judge(lines, version) is None
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def peaks(version: int) -> tuple[int, int]:
    few, many = refusing_trace(1, version), refusing_trace(4, version)
    peak(few, version)  # warm: first-use allocations out of the comparison
    return peak(few, version), peak(many, version)


@pytest.mark.parametrize("version", [1, 2])
def test_memory_is_flat_in_the_number_of_refusals(version: int) -> None:
    small, large = peaks(version)
    assert large < 1.25 * small + 20_000, (small, large)


@pytest.mark.parametrize("version", [1, 2])
def test_a_set_of_every_refused_rid_is_caught_growing(version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    every: Callable[[object], set[object]] = lambda known: set()  # noqa: E731 (what the checkers kept before)
    monkeypatch.setattr(tracecheck if version == 1 else enginecheck, "RefusedRids", every)
    small, large = peaks(version)
    assert large > 1.25 * small + 20_000, (small, large)


def planned_again(lines: list[str], rid: int | str) -> list[str]:
    """`lines` with `rid` in the plan of the last step line, once every earlier request has ended."""
    lines = list(lines)
    last = len(lines) - 2
    data = json.loads(lines[last])
    data["plan"] = [*data["plan"], [rid, 1]]
    lines[last] = json.dumps(data)
    return lines


@pytest.mark.parametrize("version", [1, 2])
def test_a_rid_refused_long_ago_planned_breaks_never_fit(version: int) -> None:
    lines = refusing_trace(1, version)  # rid 1 was refused in the first step; 1,199 refusals follow it
    assert judge(planned_again(lines, 1), version) == NEVER_FIT
    gap = 2 * ACCEPTED + 7  # past every rid offered: never added
    rule, message = judge(planned_again(lines, gap), version) or ("", "")
    assert rule == "PROTOCOL" and message == f"plan names rid {gap}, which was never added"


def test_refused_rids_answer_as_the_set_they_replace() -> None:
    """Over rids offered in a shuffled order (accepted or refused; an accepted one stays live or ended), the
    runs answer as a set of the refused rids for every rid neither live nor ended, and stay few in rid order."""
    rng = random.Random(31)
    for shuffled in (False, True):
        rids = list(range(3000))
        if shuffled:
            for start in range(0, 3000, 40):  # offered near, not in, rid order
                block = rids[start:start + 40]
                rng.shuffle(block)
                rids[start:start + 40] = block
        accepted: set[int] = set()
        refused, every = RefusedRids(accepted.__contains__), set()
        for rid in rids:
            if rng.random() < 0.7:
                refused.add(rid)
                every.add(rid)
            else:
                accepted.add(rid)
        for rid in range(-5, 3010):
            if rid not in accepted:
                assert (rid in refused) == (rid in every), rid
        # In rid order one run; shuffled, about two a block of 40 (an accepted rid offered after the refusals
        # beside it is reached over only by a later refusal next to it), not one a refusal.
        assert refused.runs <= (3000 // 40 * 2 if shuffled else 1) < len(every) // 10, refused.runs


def test_other_rids_are_kept_one_by_one_and_answer_ints_as_a_set_does() -> None:
    refused = RefusedRids(lambda rid: False)
    refused.add("a")
    refused.add(3.0)
    refused.add(True)
    assert "a" in refused and "b" not in refused
    assert 3 in refused and 1 in refused and 2 not in refused  # 3.0 == 3 and True == 1, as in a set
    assert refused.runs == 3


def test_a_refused_string_rid_planned_breaks_never_fit_and_a_refused_rid_may_be_added_again() -> None:
    lines = refusing_trace(1, 2)
    first = json.loads(lines[1])
    first["refuse"] = [*first["refuse"], ["s", K, 40]]
    lines[1] = json.dumps(first)
    violations = check_engine_trace(iter(planned_again(lines, "s"))).violations
    assert violations["NEVER-FIT"][0].message == "rid 's' was refused by add() yet is planned"
    last = len(lines) - 2
    data = json.loads(lines[last])
    data["add"] = [[1, 50, 40]]  # refused long ago, not taken: the engine may accept it now
    lines[last] = json.dumps(data)
    assert "NEVER-FIT" not in check_engine_trace(iter(lines)).violations
