"""Cost that grows with what a step holds, not with the whole run: a trace without a picture keeps
per step only what its table row shows (the first few waiting requests and counts), and its table
reads the same as the one built from every request's cell. (How fast each is belongs in
benchmarks/rule_checks_scale.py, which prints the figures.)"""

from __future__ import annotations

import pytest

from stallfree.explain import explain
from stallfree.faults.catalog import SkipAhead
from stallfree.reference import Scheduler
from stallfree.spec import Arrival, Config, Monitor, RuleViolation, Workload
from stallfree.view import record
from stallfree.view.record import WAITING_SHOWN

# 40 requests arrive at step 0 into 2 slots; more come later, so the line is long for many steps.
LONG_LINE = Workload(Config(8, 2, 400),
                     tuple(Arrival(rid, 3 + rid % 5, 2, 0 if rid < 40 else rid) for rid in range(60)))


def test_a_lean_view_holds_only_the_waiting_requests_a_row_shows() -> None:
    lean = record(LONG_LINE, Scheduler, keep=False)
    assert lean.violation is None
    view = lean.steps[-1]
    assert len(lean.steps) == 1 and len(view.cells) <= WAITING_SHOWN
    full = record(LONG_LINE, Scheduler, keep=True)
    first = full.steps[0]
    assert len(first.cells) == 40 and len(first.waiting) == 40 - 2  # every request: two admitted


@pytest.mark.parametrize("scheduler", [Scheduler, SkipAhead], ids=["reference", "SkipAhead (FCFS broken)"])
def test_the_table_without_a_picture_reads_as_the_one_with_every_cell(scheduler: type) -> None:
    rows: dict[bool, list[str]] = {True: [], False: []}
    for keep in (True, False):
        explain(LONG_LINE, scheduler, None, "s", rows[keep].append, keep=keep, keep_going=True)
    assert rows[False] == rows[True]
    assert any("more" in row for row in rows[False])  # the counted rest of a long line is shown


def test_FCFS_judges_40000_admissions_in_one_step() -> None:
    """FCFS on a step that admits 40,000 requests (a set, not a list scan: quadratic before)."""
    n = 40_000
    s = Scheduler(token_budget=n, max_seqs=n, kv_tokens=2 * n)
    m = Monitor(s, Config(n, n, 2 * n), ["FCFS"])
    for rid in range(n):
        m.add(rid, 1, 1)
    assert len(m.step().plan) == n


def test_FCFS_still_names_the_request_passed_over() -> None:
    w = Workload(Config(8, 4, 24), (Arrival(0, 3, 15, 0), Arrival(1, 2, 18, 0), Arrival(2, 3, 2, 0)))
    m = Monitor(SkipAhead(8, 4, 24), w.config, ["FCFS"])
    for a in w.requests:
        m.add(a.rid, a.prompt_len, a.max_new)
    with pytest.raises(RuleViolation, match=r"FCFS at step 0: admitted rid 2 while rid 1 waited ahead of it"):
        for _ in range(4):
            m.step()
