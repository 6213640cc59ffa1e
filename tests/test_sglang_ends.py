"""SGLang's stops and aborts, live, judged by the lifecycle rules: a request that samples its EOS ends in
SGLang's own finish check; SGLang's own abort code ends a waiting request at once and a chunked one
before the next step, as CANCEL says, but runs an aborted running request one more decode step (its
design: CANCEL broken, and reported so); bugs planted into subclasses of SGLang's Req and Scheduler
are each caught where SGLang holds the rule."""

from __future__ import annotations

import pytest
from engine_workloads import plans_only, workload
from sglang_guard import require_sglang

require_sglang()

from stallfree.conformance import check_workload  # noqa: E402
from stallfree.conformance.engines.sglang_end_faults import (  # noqa: E402
    CAUGHT_BY,
    AbortLeavesWaiting,
    ChunkAbortLeaks,
    StopIgnored,
    StopStringMissed,
)
from stallfree.conformance.engines.sglang_ends import SglangEnds, SglangStopStrings  # noqa: E402
from stallfree.conformance.kit import FAIL, NOT_APPLICABLE, PASS, conform  # noqa: E402
from stallfree.conformance.kit.report import render  # noqa: E402
from stallfree.spec import Arrival, Cancel, Config, RuleViolation, Workload, play  # noqa: E402

LIFECYCLE = ["ONE-ENTRY", "SLOTS", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", "CANCEL", "FCFS", "PROGRESS"]

# rid 0 stops on its 2nd token (SGLang samples its EOS there); rid 1 runs to max_new
STOP = Workload(Config(8, 4, 64), (Arrival(0, 4, 6, 0, stop_after=2), Arrival(1, 3, 4, 0)))
# one slot: rid 1 waits behind rid 0 and is cancelled there; rid 2 moves up
CANCEL_WAITING = Workload(Config(8, 1, 64), (Arrival(0, 4, 4, 0), Arrival(1, 3, 4, 0), Arrival(2, 2, 2, 0)),
                          cancels=(Cancel(1, 1),))
# budget 4, one slot: rid 0's 10-token prompt is cancelled after its first chunk; rid 1 waits for the slot
CANCEL_CHUNKED = Workload(Config(4, 1, 32), (Arrival(0, 10, 2, 0), Arrival(1, 1, 2, 0)), cancels=(Cancel(0, 1),))


def plans(w: Workload, factory: type = SglangEnds, rules: list[str] = LIFECYCLE) -> list[list[tuple[int, int]]]:
    steps: list[list[tuple[int, int]]] = []
    play(w, factory, rules, on_step=lambda m, f: steps.append(f.plan))
    return steps


@pytest.mark.parametrize("factory", [SglangEnds, SglangStopStrings], ids=["eos", "stop-string"])
def test_sglang_ends_a_request_on_its_sampled_eos_or_its_stop_string(factory: type) -> None:
    # SglangStopStrings: SGLang's scheduler matches the stop string in the decoded output, on the token
    # that completes it: a stop at that step, not a cancel after it
    steps = plans(STOP, factory)
    assert steps == [[(0, 4), (1, 3)], [(0, 1), (1, 1)], [(1, 1)], [(1, 1)]]  # rid 0 is not planned after


def test_sglangs_abort_takes_a_waiting_request_out_of_the_line_at_once() -> None:
    assert plans(CANCEL_WAITING) == [[(0, 4)], [(0, 1)], [(0, 1)], [(0, 1)], [(2, 2)], [(2, 1)]]


def test_sglangs_abort_of_a_chunked_prefill_frees_its_slot_before_the_next_step() -> None:
    assert plans(CANCEL_CHUNKED) == [[(0, 4)], [(1, 1)], [(1, 1)]]


def test_an_abort_takes_only_its_own_rid_though_sglang_matches_ids_by_prefix() -> None:
    # SGLang's abort takes every id that starts with the given one: rid 1 must not take rid 10 with it
    w = Workload(Config(8, 1, 64), (Arrival(0, 2, 2, 0), Arrival(1, 2, 2, 0), Arrival(10, 2, 2, 0)),
                 cancels=(Cancel(1, 1),))
    assert [p[0][0] for p in plans(w)] == [0, 0, 10, 10]


@pytest.mark.parametrize(("name", "cancel", "step"), [
    ("running", Cancel(0, 2), 2),  # cancelled while it decodes
    ("just prefilled", Cancel(0, 1), 1),  # cancelled after its prompt's last chunk
    ("pending", Cancel(0, 1, pending=True), 2),  # cancelled while the plan that decodes it is pending
])
def test_sglang_runs_an_aborted_running_request_one_more_decode_step(name: str, cancel: Cancel, step: int) -> None:
    # SGLang's abort "method 3": the request keeps running for one decode forward pass, then ends
    w = Workload(Config(8, 4, 64), (Arrival(0, 4, 6, 0), Arrival(1, 4, 6, 0)), cancels=(cancel,))
    with pytest.raises(RuleViolation) as broken:
        check_workload(w, SglangEnds, rules=["CANCEL"])
    assert (broken.value.rule, broken.value.step) == ("CANCEL", step)
    assert "plan names rid 0, which was cancelled" in broken.value.message
    check_workload(w, SglangEnds, rules=[r for r in LIFECYCLE if r != "CANCEL"])  # the rest holds


def test_sglangs_admission_is_unchanged_its_kv_break_replays_with_stops_and_cancels_on() -> None:
    # The plain adapter's admission past K (tests/test_sglang_adapter.py, judged on the plans alone)
    # replays here, and so does the break of SGLang's own account, shown as free_kv.
    w = workload((1, 4, 16), (1, 2, 0), (1, 2, 0), (1, 2, 0), (7, 1, 0))
    with pytest.raises(RuleViolation) as broken:
        check_workload(w, plans_only(SglangEnds), rules=["KV"])
    assert (broken.value.rule, broken.value.step) == ("KV", 3)
    with pytest.raises(RuleViolation) as broken:
        check_workload(workload((1, 1, 5), (1, 2, 0)), SglangEnds, rules=["KV"])
    assert (broken.value.rule, broken.value.step) == ("KV", 0)


def test_the_adapter_refuses_what_the_contract_refuses_and_changes_nothing() -> None:
    s = SglangEnds(8, 2, 64)
    s.add(0, 4, 3)
    with pytest.raises(KeyError, match=r"cancel\(7\)"):
        s.cancel(7)
    with pytest.raises(TypeError, match="rid must be an int"):
        s.cancel("0")
    plan = s.schedule()
    with pytest.raises(ValueError, match="stopped names rid 5"):
        s.complete(plan, [5])
    assert s.complete(plan, [0]) == [0]  # the refused stop changed nothing: rid 0's first token is its EOS
    with pytest.raises(KeyError, match=r"cancel\(0\)"):
        s.cancel(0)  # stopped: ended
    s.add(1, 4, 3)
    s.cancel(1)
    with pytest.raises(KeyError, match=r"cancel\(1\)"):
        s.cancel(1)  # already cancelled


# each planted bug: a workload that shows it, and the adapter it is planted behind (SGLang's code unchanged)
FAULT_WORKLOADS = {StopIgnored: (STOP, SglangEnds), StopStringMissed: (STOP, SglangStopStrings),
                   AbortLeavesWaiting: (CANCEL_WAITING, SglangEnds), ChunkAbortLeaks: (CANCEL_CHUNKED, SglangEnds)}


@pytest.mark.parametrize("fault", list(FAULT_WORKLOADS), ids=lambda f: f.__name__)
def test_a_bug_planted_in_sglangs_stop_or_abort_code_is_caught_where_sglang_holds(fault: type) -> None:
    rule, (w, unplanted) = CAUGHT_BY[fault], FAULT_WORKLOADS[fault]
    check_workload(w, unplanted, rules=[rule])  # SGLang's own code holds the rule here
    with pytest.raises(RuleViolation) as broken:
        check_workload(w, fault, rules=[rule])
    assert broken.value.rule == rule


def test_conform_drives_sglangs_stops_and_aborts_and_reports_its_cancel_as_broken() -> None:
    report = conform("stallfree.conformance.engines.sglang_ends:SglangEnds", budget=4, max_seqs=1, examples=4)
    assert report.capabilities == frozenset({"stop", "cancel"}) and not report.skipped, render(report)
    assert report.verdicts["CANCEL"] == FAIL and report.counterexamples["CANCEL"].minimal, render(report)
    assert "which was cancelled" in report.counterexamples["CANCEL"].message
    assert report.verdicts["NEVER-FIT"] == NOT_APPLICABLE
    assert all(report.verdicts[r] == PASS for r in ("ONE-ENTRY", "SLOTS", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS")), \
        render(report)


@pytest.mark.parametrize("fault", [StopIgnored, AbortLeavesWaiting], ids=lambda f: f.__name__)
def test_conform_shrinks_a_planted_stop_or_abort_bug_to_a_workload_where_sglang_holds(fault: type) -> None:
    # ChunkAbortLeaks is left out: on the grid PROGRESS breaks first at SGLang's own K edge (see
    # tests/test_sglang_adapter.py), so only the hand-written workload above tells the leak apart.
    rule = CAUGHT_BY[fault]
    report = conform(f"stallfree.conformance.engines.sglang_end_faults:{fault.__name__}", rules=[rule], budget=4,
                     max_seqs=1, examples=4)
    assert report.verdicts[rule] == FAIL, render(report)
    c = report.counterexamples[rule]
    assert c.minimal
    with pytest.raises(RuleViolation) as broken:  # the printed test's call, on the planted bug
        check_workload(c.workload, fault, rules=[rule])
    assert broken.value.rule == rule
    check_workload(c.workload, SglangEnds, rules=[rule])  # SGLang's own code holds it there
