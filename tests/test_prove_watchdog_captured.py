"""`prove --scheduler` called as `main()` with its output captured in memory (pytest's capsys), where the
watchdog's child has no file to inherit: its output goes through pipes relayed into the caller's streams
(cli/commands/relayed.py), so a call stuck in C with SIGALRM blocked is still ended from outside, exit 3
with the countdown's line after all the child wrote, and a correct scheduler reads as in a terminal."""

from __future__ import annotations

import hostile
import pytest
from hostile import assert_clean, assert_refused
from test_prove_watchdog import HUNG, PROVE, table


def test_a_call_stuck_in_c_is_ended_under_capsys(capsys: pytest.CaptureFixture[str]) -> None:
    name = "hostile_isolated:LongCCallAlarmBlocked"
    assert_refused(hostile.call([*PROVE, name], capsys), f"--scheduler {name!r} did not answer", HUNG, status=3)


def test_what_the_child_wrote_before_the_kill_comes_first(capsys: pytest.CaptureFixture[str]) -> None:
    ran = hostile.call([*PROVE, "hostile_isolated:SaysThenSticks"], capsys)
    assert ran.status == 3 and ran.out == "said on stdout before sticking\n", (ran.out, ran.err)
    lines = ran.err.strip().splitlines()
    assert lines[0] == "said on stderr before sticking" and HUNG in lines[-1] and len(lines) == 2, ran.err


@pytest.mark.parametrize("name", ["hostile_isolated:Rewrites", "hostile_isolated:PagedHonest"])
def test_a_correct_scheduler_reads_the_same_under_capsys(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The control: the table relayed under capsys is the one a child process prints to a pipe."""
    captured, spawned = hostile.call([*PROVE, name], capsys), hostile.spawn([*PROVE, name])
    assert captured.status == spawned.status == 0, (captured.err[-2000:], spawned.err[-2000:])
    assert_clean(captured)
    assert captured.out.startswith("claim ") and table(captured.out) == table(spawned.out), (captured.out, spawned.out)


def test_json_to_stdout_is_relayed_too(capsys: pytest.CaptureFixture[str]) -> None:
    """--json -: only the JSON reaches stdout, from the child through the pipe."""
    import json

    ran = hostile.call([*PROVE, "hostile_isolated:PagedHonest", "--json", "-"], capsys)
    assert ran.status == 0, ran.err
    rows = json.loads(ran.out)
    assert [row["claim"] for row in rows] == ["ALL PAGED RULES", "PREEMPT-BOUND"], rows
