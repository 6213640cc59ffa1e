"""Grading a learner's FILE in a process of its own (a fresh interpreter, `python -m
stallfree.exercises.apart`), with a limit on the whole grading, so that nothing the answer does can
pass for a grade: an answer that calls os._exit (or ends its process any other way) or that hangs, in
Python or in one long C call, is stopped and named (`GradingStopped`: exit 3), never read as a status
of the command. The grade crosses back as JSON: whether it is correct and its lines, or why FILE cannot
be graded (an AnswerError: exit 2). The answer's own prints go to stderr, and whatever it leaves
running ends with the process."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from stallfree.conformance.isolation.host import refuse_exit
from stallfree.conformance.isolation.remote import ended, reap

from .base import AnswerError, Grade

DEFAULT_LIMIT_S = 600.0  # a whole grading (the right answer to 4: under a second): only a hang comes near it
PR_SET_PDEATHSIG = 1  # prctl(2): the grader's process is killed when the command's dies
REAL_EXIT = os._exit


class GradingStopped(Exception):
    """The answer ended the grading's process, or the grading did not finish within the limit."""


def grade_apart(number: int, learner: str, path: Path, seed: int | None, limit: float = DEFAULT_LIMIT_S) -> Grade:
    """Exercise `number` (as `learner` gets it) graded on FILE `path` in a process of its own. Raises
    AnswerError (FILE cannot be graded) or GradingStopped."""
    from stallfree.conformance.isolation.sandbox import next_line

    proc = subprocess.Popen([sys.executable, "-m", "stallfree.exercises.apart"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, cwd=os.getcwd())
    try:
        assert proc.stdin is not None and proc.stdout is not None
        request = {"number": number, "learner": learner, "path": str(path), "seed": seed,
                   "sys_path": [p if p else os.getcwd() for p in sys.path]}
        with contextlib.suppress(BrokenPipeError, OSError):  # it is gone already: its end is read below
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
        try:
            line, _ = next_line(proc.stdout.fileno(), b"", limit)
        except EOFError:
            raise GradingStopped(f"FILE {str(path)!r}: the answer ended the grading's process ({ended(proc)}) "
                                 "before a grade") from None
        if line is None:
            raise GradingStopped(f"FILE {str(path)!r}: grading did not finish within {limit:g} s (--timeout; "
                                 "stopped from outside)")
        reply = json.loads(line)
    finally:
        reap(proc)
    if "answer_error" in reply:
        raise AnswerError(reply["answer_error"])
    if "stopped" in reply:
        raise GradingStopped(reply["stopped"])
    if "internal" in reply:
        raise RuntimeError(f"grading FILE {str(path)!r} failed: {reply['internal']}")
    return Grade(bool(reply["correct"]), [str(line) for line in reply["lines"]])


def graded(request: dict[str, Any]) -> dict[str, Any]:
    """The grade of the request's FILE, as JSON data."""
    from .catalog import exercise

    path = request["path"]
    try:
        grade = exercise(request["number"], request["learner"]).grade(Path(path), request["seed"])
    except AnswerError as error:
        return {"answer_error": str(error)}
    except SystemExit as error:  # sys.exit or os._exit in the answer, on import or while judged
        call = getattr(error, "call", None) or f"sys.exit({error.code!r})"
        return {"stopped": f"FILE {path!r}: the answer called {call} before a grade"}
    except Exception as error:  # the grader's own failure, not the answer's (judge() keeps those as CRASH)
        return {"internal": f"{type(error).__name__}: {error}"}
    except BaseException as error:  # a KeyboardInterrupt or a bare BaseException of the answer's
        return {"stopped": f"FILE {path!r}: the answer raised {type(error).__name__} outside any call judged"}
    return {"correct": grade.correct, "lines": grade.lines}


def main() -> None:
    requests = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)  # the answer's prints go to stderr, never into the reply
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the command kills it when done
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    request = json.loads(requests.readline())
    sys.path[:] = request["sys_path"]
    os._exit = refuse_exit  # type: ignore[assignment]
    reply = graded(request)
    out.write(json.dumps(reply).encode() + b"\n")
    out.flush()
    REAL_EXIT(0)  # a thread the answer left running does not hold the process


if __name__ == "__main__":
    main()
