"""`stallfree run --scheduler MODULE:FACTORY`: a user's scheduler is hosted in its own process, as
`trace` hosts it (rank 0 drives the real model; only the scheduler's calls cross the pipe), so a target
that patches the oracle is judged all the same, and one stuck in a C call is exit 3 naming the call.
Each run a child `stallfree run`, waited on as an event (the limit only turns a hang into a failure)."""

from __future__ import annotations

import functools

import hostile
import pytest
from hostile import EVENT_LIMIT_S, assert_clean, assert_refused

pytest.importorskip("torch")
spawn = functools.partial(hostile.spawn, timeout=EVENT_LIMIT_S)

RUN = ["run", "--model", "tiny", "--tp", "1", "--no-equivalence", "--call-timeout", "1", "--scheduler"]
HOSTILE = "hostile_isolated"


def monitor_lines(out: str) -> list[str]:
    """The verdicts the monitor gave (the section after `-- monitor`)."""
    lines = out.splitlines()
    return lines[lines.index("-- monitor") + 1:]


def test_a_target_that_swaps_the_monitors_judge_is_judged_all_the_same() -> None:
    """In process the patch silences the monitor (only the real path's PREFILL-ONCE broke); hosted it
    reaches the host's copy only, and the monitor breaks BUDGET at step 0."""
    ran = spawn([*RUN, f"{HOSTILE}:PatchesTheJudge"])
    assert_clean(ran)
    assert ran.status == 1, (ran.out[-2000:], ran.err[-2000:])
    assert "BUDGET           BROKEN at step 0: the plan carries 128 tokens; the budget is 64" in monitor_lines(ran.out)


def test_the_same_target_not_patching_breaks_the_same_rule() -> None:
    ran = spawn([*RUN, f"{HOSTILE}:OverBudget"])
    assert ran.status == 1, (ran.out[-2000:], ran.err[-2000:])
    assert "BUDGET           BROKEN at step 0: the plan carries 128 tokens; the budget is 64" in monitor_lines(ran.out)


@pytest.mark.parametrize("tp", ["1", "2"])
def test_a_target_stuck_in_one_c_call_is_exit_3_naming_the_call(tp: str) -> None:
    """With one rank the scheduler's calls are made from the command's process, with two from rank 0's:
    hosted either way, the call is stopped from outside after --call-timeout."""
    ran = spawn([*RUN, f"{HOSTILE}:LongCCall", "--tp", tp])
    assert_refused(ran, "LongCCall did not answer", "schedule() did not return within 1 s (--call-timeout", status=3)
    assert "TIMEOUT          BROKEN at step 0 (scheduler)" in ran.out
    assert "holds" not in ran.out


def test_a_target_that_segfaults_is_a_crash_naming_the_signal() -> None:
    ran = spawn([*RUN, f"{HOSTILE}:Segfaults"])
    assert_refused(ran, "schedule()", "killed by SIGSEGV", status=3)
    assert "CRASH            BROKEN at step 0 (scheduler)" in ran.out


def test_a_correct_hosted_target_still_holds() -> None:
    ran = spawn([*RUN, f"{HOSTILE}:Rewrites"])
    assert_clean(ran)
    assert ran.status == 0, (ran.out[-2000:], ran.err[-2000:])
    assert "BROKEN" not in ran.out and "holds" in "\n".join(monitor_lines(ran.out))
