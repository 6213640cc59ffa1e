"""`stallfree exercise N FILE` grades FILE in a process of its own, with a limit (`--timeout`), so
nothing the answer does reads as a grade: an answer that ends its process (even past the os._exit
guard, by posix._exit), or that hangs in schedule() in Python or in one C call, is exit 3 naming what
happened; a thread it leaves running does not keep the command alive. Controls: a right answer is
still 0, a wrong one 1. Each a child `stallfree exercise`, waited on as an event (the limit only
turns a hang into a failure)."""

from __future__ import annotations

import functools
from pathlib import Path

import hostile
import pytest
from hostile import EVENT_LIMIT_S, assert_clean, assert_refused

spawn = functools.partial(hostile.spawn, timeout=EVENT_LIMIT_S)

RIGHT = """from stallfree.variants import Stepwise


class Scheduler(Stepwise):
    def phases(self):
        return (self.plan_partials, self.plan_decodes, self.admit)
"""
WRONG = RIGHT.replace("(self.plan_partials, self.plan_decodes, self.admit)", "(self.plan_decodes, self.plan_partials, "
                                                                                "self.admit)")
SCHEDULES = """import ctypes
import posix
import threading
import time
from stallfree.variants import Stepwise


class Scheduler(Stepwise):
    def schedule(self):
        {body}
        return super().schedule()
"""


def answer(tmp_path: Path, text: str) -> str:
    path = tmp_path / "answer.py"
    path.write_text(text)
    return str(path)


def test_a_right_answer_still_passes_and_a_wrong_one_fails(tmp_path: Path) -> None:
    right = spawn(["exercise", "4", answer(tmp_path, RIGHT), "--seed", "1"])
    assert right.status == 0, (right.out[-2000:], right.err[-2000:])
    wrong = spawn(["exercise", "4", answer(tmp_path, WRONG), "--seed", "1"])
    assert wrong.status == 1, (wrong.out[-2000:], wrong.err[-2000:])
    assert_clean(right)
    assert_clean(wrong)


@pytest.mark.parametrize("exercise", ["4", "5"])
def test_an_answer_that_ends_its_process_past_the_exit_guard_does_not_pass(exercise: str, tmp_path: Path) -> None:
    ran = spawn(["exercise", exercise, answer(tmp_path, "import posix\nposix._exit(0)\n")])
    assert_refused(ran, "the answer ended the grading's process (exit code 0) before a grade", status=3)


def test_an_answer_that_exits_inside_schedule_does_not_pass(tmp_path: Path) -> None:
    ran = spawn(["exercise", "4", answer(tmp_path, SCHEDULES.format(body="posix._exit(0)"))])
    assert_refused(ran, "the answer ended the grading's process (exit code 0)", status=3)


@pytest.mark.parametrize("body", ["ctypes.CDLL(None).sleep(3600)", "while True: pass"], ids=["C call", "Python loop"])
def test_an_answer_that_hangs_in_schedule_is_stopped_from_outside(body: str, tmp_path: Path) -> None:
    ran = spawn(["exercise", "4", answer(tmp_path, SCHEDULES.format(body=body)), "--timeout", "1"])
    assert_refused(ran, "grading did not finish within 1 s (--timeout; stopped from outside)", status=3)


def test_a_thread_the_answer_leaves_running_does_not_keep_the_command_alive(tmp_path: Path) -> None:
    body = "threading.Thread(target=time.sleep, args=(3600,)).start()"  # non-daemon: would hold an interpreter
    ran = spawn(["exercise", "4", answer(tmp_path, SCHEDULES.format(body=body)), "--seed", "1"])
    # Graded: the unchanged policy breaks nothing (a wrong answer), and the command returns at all.
    assert ran.status == 1, (ran.out[-2000:], ran.err[-2000:])
    assert_clean(ran)
