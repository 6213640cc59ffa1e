"""`prove --scheduler` runs the model check in a child watched from outside (cli/commands/supervised.py):
a call stuck where the SIGALRM countdown cannot stop it (C with the alarm blocked, or a scheduler that
disarms it) still ends as exit 3 naming the call, no traceback, nothing of the child left; a call the
countdown stops, and a correct scheduler, read as before. Each run is a child `stallfree prove`, waited
on as an event (the limit only turns a hang into a failure; nothing here reads the clock)."""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
from pathlib import Path

import hostile
import pytest
from hostile import EVENT_LIMIT_S, assert_clean, assert_refused, children, env, wait_for

spawn = functools.partial(hostile.spawn, timeout=EVENT_LIMIT_S)

PROVE = ["prove", "--methods", "model", "--bound", "2,2,6,2,2,2", "--hidden", "none", "--timeout", "1",
         "--scheduler"]
HUNG = "schedule() did not return within 1 s (--timeout)"


def descendants(pid: int) -> list[int]:
    found = children(pid)
    return found + [grand for child in found for grand in descendants(child)]


def gone(pid: int) -> bool:
    """Ended: no process, or a zombie (its parent, perhaps init, has not read its status yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def blocks(pid: int, signum: int) -> bool:
    """Whether `pid` blocks `signum` now (Linux /proc: its SigBlk mask): the hostile call has begun."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:"))
    return bool(int(mask, 16) >> (signum - 1) & 1)


@pytest.mark.parametrize("name", ["LongCCallAlarmBlocked", "DisarmsTheAlarm"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_call_no_signal_stops_is_ended_from_outside_naming_it(name: str, jobs: str) -> None:
    ran = spawn([*PROVE, f"hostile_isolated:{name}", "--jobs", jobs, "--methods", "model,symbolic"])
    assert_refused(ran, f"--scheduler 'hostile_isolated:{name}' did not answer", HUNG, status=3)


def test_nothing_of_the_stuck_child_outlives_the_verdict() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "stallfree", *PROVE, "hostile_isolated:LongCCallDeaf"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    stuck: list[int] = []
    wait_for(lambda: bool(stuck.extend(p for p in descendants(proc.pid) if blocks(p, signal.SIGALRM)) or stuck)
             or proc.poll() is not None, "the call begun in prove's child")
    out, err = proc.communicate(timeout=EVENT_LIMIT_S)
    assert proc.returncode == 3 and HUNG in err.strip().splitlines()[-1], (out[-1000:], err[-1000:])
    assert stuck and "Traceback" not in err
    wait_for(lambda: all(gone(pid) for pid in stuck), "the stuck process killed")


def test_the_countdown_still_stops_a_call_in_python_with_the_same_line() -> None:
    """The control: a call that SIGALRM reaches (a Python loop; libc's sleep, cut short by it) is
    stopped inside the child, as before the watchdog, with the line the watchdog prints."""
    for name in ("hostile_schedulers:HangsInSchedule", "hostile_isolated:LongCCall"):
        assert_refused(spawn([*PROVE, name]), f"--scheduler {name!r} did not answer", HUNG, status=3)


def test_a_segfault_in_the_child_is_a_crash_naming_the_signal() -> None:
    """In process, a segfault ended prove with status 139 and no line; the child's death is read here."""
    ran = spawn([*PROVE, "hostile_isolated:Segfaults"])
    assert_refused(ran, "--scheduler 'hostile_isolated:Segfaults' crashed", "killed by SIGSEGV", status=3)


def test_a_correct_scheduler_reads_as_before() -> None:
    """A scheduler from outside stallfree that keeps the reference's plan: exit 0 and the table, in a
    child (stdout is a pipe, a file), as in process."""
    ran = spawn([*PROVE, "hostile_isolated:Rewrites"])
    assert ran.status == 0, ran.err[-2000:]
    assert_clean(ran)
    assert ran.out.startswith("claim ") and "ALL RULES            model check " in ran.out
    assert ran.out.strip().splitlines()[-1] == "5 of 13 claims hold; 8 not judged (vacuous at a bound, or not run)"


@pytest.mark.parametrize("name", ["LongCCallAlarmBlocked", "LongCCallDeaf"])
def test_ctrl_c_ends_the_child_and_reads_interrupted(name: str) -> None:
    """Ctrl-C reaches the watchdog (the terminal's group); the child, in a group of its own, is passed it
    and ends as prove does, or, deaf to it, is killed: either way `interrupted`, 130, nothing left."""
    proc = subprocess.Popen([sys.executable, "-m", "stallfree", *PROVE[:-3], "--timeout", "600", "--scheduler",
                             f"hostile_isolated:{name}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as from a terminal
    stuck: list[int] = []
    wait_for(lambda: bool(stuck.extend(p for p in descendants(proc.pid) if blocks(p, signal.SIGALRM)) or stuck)
             or proc.poll() is not None, "the call begun in prove's child")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=EVENT_LIMIT_S)
    assert proc.returncode == 130, (out[-1000:], err[-1000:])
    assert err.strip().splitlines()[-1] == "stallfree prove: interrupted" and "Traceback" not in err, err
    assert stuck
    wait_for(lambda: all(gone(pid) for pid in stuck), "the stuck process ended")


DESIGNS = {"Paged": "stallfree.paged:small_blocks", "Prefix": "stallfree.prefix:small_blocks"}


def table(out: str) -> list[list[str]]:
    """The output's lines as words, a row's seconds (its last word, a decimal) left out: the only figure
    that differs run to run."""
    return [words[:-1] if words and words[-1].replace(".", "", 1).isdigit() and "." in words[-1] else words
            for words in (line.split() for line in out.strip().splitlines())]


@pytest.mark.parametrize("design", sorted(DESIGNS))
@pytest.mark.parametrize("hang", ["HangsInSchedule", "LongCCallAlarmBlocked"])
def test_the_paged_and_prefix_model_checks_time_each_call(design: str, hang: str) -> None:
    """The paged and prefix designs' own model checks (`paged_rows`, `prefix_rows`) are timed and watched
    as the reservation's: a Python loop is stopped by the countdown, a C call with SIGALRM blocked is
    ended from outside; either is exit 3 naming the call."""
    name = f"hostile_isolated:{design}{hang}"
    assert_refused(spawn([*PROVE, name]), f"--scheduler {name!r} did not answer", HUNG, status=3)


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_a_correct_paged_or_prefix_scheduler_from_outside_reads_as_the_projects_own(design: str) -> None:
    """The control: the design's own scheduler written outside stallfree (2-token blocks) exits 0 with
    the table of the project's own factory at the same bound, the watchdog's child and all."""
    ran, own = spawn([*PROVE, f"hostile_isolated:{design}Honest"]), spawn([*PROVE, DESIGNS[design]])
    assert ran.status == own.status == 0, (ran.err[-2000:], own.err[-2000:])
    assert_clean(ran)
    assert f"ALL {design.upper()} RULES " in ran.out and "holds" in ran.out
    assert table(ran.out) == table(own.out), (ran.out, own.out)


def test_an_outside_prefix_scheduler_without_hidden_is_a_bad_argument() -> None:
    """Its model check needs its state outside the key declared: without --hidden it is refused as a bad
    argument (exit 2) before anything runs, naming --scheduler and --hidden; with --hidden none it runs."""
    name = "hostile_isolated:PrefixHonest"
    bare = [arg for arg in PROVE if arg not in ("--hidden", "none")]
    assert_refused(spawn([*bare, name]), f"--scheduler {name!r}", "--hidden declares", status=2)
    assert spawn([*PROVE, name]).status == 0
