"""A user's scheduler runs in a host process of its own (stallfree.conformance.isolation.host), so
nothing it does reaches the oracle: each case of the second hostile round that attacked trace's
process, with the status the README's exit-status table promises. Each is a child `stallfree trace`,
waited on as an event (the limit only turns a hang into a failure; nothing here reads the clock)."""

from __future__ import annotations

import functools

import hostile
import pytest
from hostile import EVENT_LIMIT_S, assert_clean, assert_refused

spawn = functools.partial(hostile.spawn, timeout=EVENT_LIMIT_S)  # the limit only turns a hang into a failure

HOSTILE = "hostile_isolated"
TRACE = ["trace", "--example", "hand", "--scheduler"]


def trace(name: str, *more: str) -> object:
    return spawn([*TRACE, f"{HOSTILE}:{name}", *more])


@pytest.mark.parametrize("name", ["OverBudget", "PatchesTheJudge"])
def test_a_scheduler_that_swaps_the_judge_is_judged_all_the_same(name: str) -> None:
    """The negative control and the attack read the same: BUDGET broken at step 0, exit 1."""
    ran = trace(name)
    assert ran.status == 1, ran.err[-2000:]
    assert "BUDGET           BROKEN at step 0: the plan carries 16 tokens; the budget is 8" in ran.out


def test_a_plan_that_reads_differently_on_each_look_is_judged_on_the_one_value_read() -> None:
    """Read once in the host: the table shows the plan the verdict judged (the honest first look), never
    the over-budget one beside a hold."""
    ran = trace("FicklePlan")
    assert ran.status == 0, ran.out[-2000:]
    assert "16/8" not in ran.out and "BUDGET           holds" in ran.out


def test_a_generator_as_the_plan_is_a_protocol_break() -> None:
    """A one-shot iterator is no sequence (complete(plan) would get it back read): PROTOCOL, not PROGRESS."""
    ran = trace("GeneratorPlan")
    assert ran.status == 1, ran.out[-2000:]
    assert "PROTOCOL         BROKEN at step 0: schedule() returned generator <generator object" in ran.out
    assert "a one-shot iterator, not a sequence" in ran.out and "PROGRESS         BROKEN" not in ran.out


def test_a_plan_that_is_a_sequence_of_its_own_type_holds() -> None:
    """The control: a tuple plan, read as often as looked at, is no one-shot iterator."""
    ran = trace("TuplePlan")
    assert ran.status == 0, ran.out[-2000:]
    assert "BROKEN" not in ran.out and "PROGRESS         holds (6 steps)" in ran.out


@pytest.mark.parametrize("name", ["LongCCall", "DisarmsTheAlarm"])
def test_a_call_stuck_where_no_signal_reaches_is_stopped_from_outside(name: str) -> None:
    ran = trace(name, "--timeout", "1")
    assert_refused(ran, "did not answer", "schedule() did not return within 1 s", status=3)
    assert "TIMEOUT          BROKEN at step 0" in ran.out


def test_a_non_daemon_thread_of_the_scheduler_does_not_keep_trace_alive() -> None:
    ran = trace("LeavesAThread")  # returns at all: the host and its thread were ended after the verdict
    assert ran.status == 0, ran.err[-2000:]
    assert_clean(ran)


def test_a_scheduler_that_forks_gives_one_report() -> None:
    ran = trace("Forks")
    assert ran.status == 0, ran.err[-2000:]
    assert ran.out.count("BUDGET           holds") == 1, ran.out


def test_the_schedulers_own_interrupt_is_not_the_users_ctrl_c() -> None:
    raised = trace("RaisesKeyboardInterrupt")
    assert_refused(raised, "schedule() raised KeyboardInterrupt", status=3)
    signalled = trace("SignalsItsOwnInterrupt")  # SIGINT to its own process: the host ignores it
    assert signalled.status == 0, signalled.err[-2000:]


def test_a_bare_base_exception_is_a_crash_not_a_traceback() -> None:
    assert_refused(trace("RaisesBaseException"), "schedule() raised BaseException: not an Exception", status=3)


def test_a_segfault_is_a_crash_naming_the_signal() -> None:
    ran = trace("Segfaults")
    assert_refused(ran, "schedule()", "killed by SIGSEGV", status=3)
    assert "CRASH            BROKEN at step 0" in ran.out


SIMULATE = ["simulate", "--trace", "code", "--limit", "5", "--quiet", "--timeout", "1", "--scheduler"]


@pytest.mark.parametrize("name", ["hostile_schedulers:HangsInSchedule", f"{HOSTILE}:LongCCall"])
def test_simulate_stops_a_scheduler_that_never_answers(name: str) -> None:
    assert_refused(spawn([*SIMULATE, name]), "did not answer", "schedule() did not return within 1 s", status=3)


def test_simulate_of_a_scheduler_that_swaps_the_judge_still_finds_the_break() -> None:
    ran = spawn([*SIMULATE, f"{HOSTILE}:PatchesTheJudge", "--check"])
    assert_refused(ran, "broke BUDGET at step 0", status=1)


PROVE = ["prove", "--methods", "model", "--bound", "2,2,6,2,2,2", "--hidden", "none", "--scheduler"]


def test_the_model_check_of_a_scheduler_that_never_answers_is_stopped_naming_the_call() -> None:
    ran = spawn([*PROVE, "hostile_schedulers:HangsInSchedule", "--timeout", "1"])
    assert_refused(ran, "did not answer", "schedule() did not return within 1 s", status=3)


def test_the_model_check_through_the_watchdog_still_finds_a_break() -> None:
    """The negative control: the timed subclass is copied and judged as the scheduler itself."""
    ran = spawn([*PROVE, f"{HOSTILE}:OverBudget", "--quiet"])
    assert ran.status == 1, ran.err[-2000:]
    assert "BUDGET at step 0: the plan carries 3 tokens; the budget is 2" in ran.out


CAMPAIGN = ["campaign", "--sims", "3", "--jobs", "1", "--quiet", "--scheduler"]


@pytest.mark.parametrize(("name", "status"), [
    ("OverBudget", 1), ("PatchesTheJudge", 1), ("RaisesKeyboardInterrupt", 3), ("Segfaults", 3),
    ("LeavesAThread", 0), ("Forks", 0),
])
def test_campaign_judges_a_hosted_scheduler_whatever_it_does(name: str, status: int) -> None:
    ran = spawn([*CAMPAIGN, f"{HOSTILE}:{name}"])  # returns at all: no thread or fork outlived the verdict
    assert ran.status == status, (ran.out[-1500:], ran.err[-1500:])
    assert_clean(ran)
    assert ("BUDGET broken" in ran.out) == (status == 1), ran.out[-1500:]


def test_a_hosted_schedulers_value_error_is_still_a_value_error() -> None:
    """The negative control of the crossing: an add() refusing with InvalidField (a ValueError) is a
    refusal as in process, not a NEVER-FIT break."""
    ran = spawn(["campaign", "--sims", "10", "--jobs", "1", "--quiet", "--scheduler", f"{HOSTILE}:Rewrites"])
    assert ran.status == 0, ran.out[-1500:]


@pytest.mark.parametrize("plan", [(e for e in [(0, 1)]), iter([(0, 1)]), map(tuple, [(0, 1)])])
def test_the_monitor_names_a_one_shot_plan_in_process_too(plan: object) -> None:
    from stallfree.spec.errors import RuleViolation
    from stallfree.spec.returned import plan_entries

    with pytest.raises(RuleViolation) as caught:
        plan_entries(3, plan)
    assert caught.value.rule == "PROTOCOL" and "a one-shot iterator, not a sequence" in str(caught.value)
    assert plan_entries(3, ((0, 1),)) == [(0, 1)]  # the control: a sequence is read as it is
