"""`stallfree prove --jobs N`: the suite's methods (`suite.RUNNERS`) run in N forked worker processes
at once, each worker one group of methods, and their rows put back in the order of the serial run.

A group is one method, except that a differential run after the model check shares its group (it
compares the Z3 step on the states that model check reached, `Options.model_states`). Nothing else
passes between methods, so the rows, their order and the verdicts are those of `suite.run` with one
job: only the seconds differ. Groups start longest first (`COST`), so the two long ones (the model
checks and CrossHair) overlap on two cores.

A worker ignores Ctrl-C (the terminal sends it to the whole process group) through a handler that a
child process it starts does not inherit, so CrossHair's subprocess still stops on it; this process
raises `KeyboardInterrupt` and stops every worker (SIGTERM, then SIGKILL after `GRACE_S`). An error
in a method is raised here, as the serial run would raise it, once the methods before it have run.
"""

from __future__ import annotations

import multiprocessing
import posix
import signal
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

from stallfree.testing.campaign import interrupts_held  # the campaign's workers are forked the same way

GRACE_S = 2.0  # how long a stopped worker has to end its own subprocesses before it is killed
# Rough seconds of each method at the default bound (a default prove's rows): only the order groups start in.
COST = {"model": 30.0, "crosshair": 30.0, "z3": 12.0, "differential": 8.0, "symbolic": 15.0, "variants": 20.0,
        "quint": 10.0}


class _Stopped(BaseException):
    """SIGTERM in a worker: this process stops it."""


def groups(methods: tuple[str, ...]) -> list[tuple[int, ...]]:
    """The methods (by their place in `methods`) in groups that can run apart: a differential after the
    model check joins the model check's group."""
    out: list[tuple[int, ...]] = []
    for at, method in enumerate(methods):
        model = next((i for i, g in enumerate(out) if methods[g[0]] == "model"), None)
        if method == "differential" and model is not None:
            out[model] = (*out[model], at)
        else:
            out.append((at,))
    return out


def run(options: Any, say: Callable[[str], None], runners: dict[str, Any], jobs: int) -> list[Any]:
    """The rows of every method of `options.methods`, in their serial order, from `jobs` workers."""
    methods = options.methods
    todo = [tuple(methods[at] for at in group) for group in groups(methods)]
    order = sorted(range(len(todo)), key=lambda i: -sum(COST.get(m, 1.0) for m in todo[i]))
    done: dict[int, tuple[str, Any]] = {}
    running: dict[Any, tuple[int, Any]] = {}  # a worker's end of its pipe: its group and process
    try:
        while len(done) < len(todo):
            while order and len(running) < jobs:
                i = order.pop(0)
                _start(options, runners, todo[i], i, running)
            for conn in wait(list(running)):
                answer = _receive(conn, running[conn][1])
                if answer[0] == "say":  # a worker's progress line, said here (where stderr is this process's)
                    say(answer[1])
                    continue
                i, _ = running.pop(conn)
                done[i] = answer
            _raise_first_error(done)
    finally:
        _stop([process for _, process in running.values()])
    rows_at = {at: rows for i, group in enumerate(groups(methods)) for at, rows in zip(group, done[i][1], strict=True)}
    return [row for at in range(len(methods)) for row in rows_at[at]]


def _raise_first_error(done: dict[int, tuple[str, Any]]) -> None:
    """Raise the error of the first group that failed once every group before it has answered."""
    for i in range(len(done) + 1):
        if i not in done:
            return
        kind, value = done[i]
        if kind == "error":
            raise value


def _start(options: Any, runners: dict[str, Any], group: tuple[str, ...], i: int,
           running: dict[Any, tuple[int, Any]]) -> None:
    """Fork the worker of group `i` and add it to `running` (before a Ctrl-C held meanwhile is raised)."""
    ours, theirs = multiprocessing.Pipe(duplex=False)
    # Not a daemon: a method may fork a pool of its own (the model check's workers).
    process = multiprocessing.get_context("fork").Process(target=_work, args=(options, runners, group, theirs))
    with interrupts_held():
        process.start()
        theirs.close()
        running[ours] = (i, process)


def _receive(conn: Any, process: Any) -> tuple[str, Any]:
    """The worker's next message: ("say", a progress line), or its last: ("rows", ...) or ("error", ...)."""
    try:
        answer: tuple[str, Any] = conn.recv()
    except EOFError:  # the worker died without answering (killed, or out of memory)
        process.join()
        answer = ("error", RuntimeError(f"a proof worker ended without an answer (exit status {process.exitcode})"))
    if answer[0] != "say":
        conn.close()
        process.join()
    return answer


def _work(options: Any, runners: dict[str, Any], group: tuple[str, ...], conn: Connection) -> None:
    """A worker: run the group's methods, send their progress lines and then their rows (or the error),
    and end the process here (`posix._exit`: `os._exit` may be the caller's guard, which raises)."""
    signal.signal(signal.SIGINT, _ignore)
    signal.signal(signal.SIGTERM, _stop_worker)

    def said(message: str) -> None:
        conn.send(("say", message))

    try:
        conn.send(("rows", [runners[method](options, said) for method in group]))
    except _Stopped:
        pass
    except Exception as error:  # raised in the parent, as the serial run would
        conn.send(("error", _picklable(error)))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        posix._exit(0)


def _ignore(signum: int, frame: Any) -> None:
    """Ctrl-C in a worker: the parent stops it (a Python handler, so exec'd children get the default)."""


def _stop_worker(signum: int, frame: Any) -> None:
    raise _Stopped


def _picklable(error: Exception) -> Exception:
    import pickle

    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # an error that does not pickle is sent as its type and message
        return RuntimeError(f"{type(error).__name__}: {error}")


def _stop(processes: list[Any]) -> None:
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + GRACE_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()
