"""`stallfree prove --jobs N`: the suite's methods (`suite.RUNNERS`) run in N forked worker processes
at once, and their rows put back in the order of the serial run.

The work is cut into units: a method whose rows come in pieces (`suite.PARTS`: each Z3 theorem, each
CrossHair contract, ...) gives one unit per piece, any other method one unit. The differential's first
piece compares the Z3 step on the states the model check reached (`Options.model_states`), so after
the model check it joins the model check's unit. Nothing else passes between units, so the rows, their
order and the verdicts are those of `suite.run` with one job: only the seconds differ. Each worker
takes the next unit as it finishes one, longest first (`COST`: measured CPU seconds), so the workers
stay busy until the end; when its last unit is done, a worker says its CPU seconds (its subprocesses
included), the figure an idle machine's wall time follows.

A worker ignores Ctrl-C (the terminal sends it to the whole process group) through a handler that a
child process it starts does not inherit, so CrossHair's subprocess still stops on it; this process
raises `KeyboardInterrupt` and stops every worker (SIGTERM, then SIGKILL after `GRACE_S`). An error
in a unit is raised here, as the serial run would raise it, once the units before it have run.
"""

from __future__ import annotations

import _thread
import multiprocessing
import os
import posix
import resource
import signal
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

from stallfree.testing.campaign import interrupts_held  # the campaign's workers are forked the same way

GRACE_S = 2.0  # how long a stopped worker has to end its own subprocesses before it is killed
# Rough CPU seconds of each unit at the default bound, by method or piece name (each piece of a default
# prove run alone, one after another in one process): only the order units start in, longest first. A
# piece not named counts one second.
COST = {"model": 45.0, "crosshair": 30.0, "z3": 23.0, "symbolic": 21.0, "variants": 20.0, "quint": 10.0,
        "differential": 14.0, "differential random": 4.7, "differential cancels": 1.1, "z3 cancels": 4.6,
        "z3 READY-WITHIN-BUDGET": 2.4, "z3 SLOTS": 1.9, "z3 KV": 1.9, "z3 PARTIAL-NEXT": 1.7,
        "z3 LIVENESS-STEPS": 1.3, "symbolic STEP (code)": 6.3, "symbolic STOPS (code)": 2.2,
        "symbolic CANCEL (code)": 1.6, "symbolic ADD (code)": 8.3, "symbolic FOLD (code)": 1.4,
        "symbolic FOLD (code, induction, any N)": 0.9, "symbolic FOLD (code, stepwise)": 1.4,
        **{f"crosshair {kind}": 4.5 for kind in (
            "add", "schedule", "complete", "policy", "stop contract", "cancel contract")}}

Unit = tuple[tuple[int, int | None], ...]  # (a method's place in `methods`, its piece or None: all of it)


class _Stopped(BaseException):
    """SIGTERM in a worker: this process stops it."""


def units(methods: tuple[str, ...], parts: dict[str, list[Any]]) -> list[Unit]:
    """The work in units that can run apart, in the serial order of their first piece: a method with
    parts one unit per piece, any other one unit; a differential's first piece after the model check
    joins the model check's unit."""
    out: list[list[tuple[int, int | None]]] = []
    for at, method in enumerate(methods):
        model = next((i for i, u in enumerate(out) if methods[u[0][0]] == "model"), None)
        pieces: list[int | None] = list(range(len(parts[method]))) if method in parts else [None]
        for piece in pieces:
            if method == "differential" and piece in (0, None) and model is not None:
                out[model].append((at, piece))
            else:
                out.append([(at, piece)])
    return [tuple(u) for u in out]


def cost(unit: Unit, methods: tuple[str, ...], parts: dict[str, list[Any]]) -> float:
    """The unit's rough CPU seconds (`COST`, by method or by piece name)."""
    names = [methods[at] if piece is None else parts[methods[at]][piece][0] for at, piece in unit]
    return sum(COST.get(name, 1.0) for name in names)


def run(options: Any, say: Callable[[str], None], runners: dict[str, Any], jobs: int,
        parts: dict[str, list[Any]] | None = None) -> list[Any]:
    """The rows of every method of `options.methods`, in their serial order, from `jobs` workers."""
    methods, parts = options.methods, parts or {}
    todo = units(methods, parts)
    order = sorted(range(len(todo)), key=lambda i: -cost(todo[i], methods, parts))
    done: dict[int, tuple[str, Any]] = {}
    running: dict[Any, tuple[int, Any]] = {}  # a worker's end of its pipe: its unit and process
    try:
        for _ in range(min(jobs, len(todo))):
            _start(options, runners, parts, todo, order.pop(0), running)
        while running:
            for conn in wait(list(running)):
                answer = _receive(conn, running[conn][1])
                if answer[0] == "say":  # a worker's progress line, said here (where stderr is this process's)
                    say(answer[1])
                    continue
                i, process = running.pop(conn)
                done[i] = answer
                if answer[0] == "died":
                    done[i] = ("error", answer[1])
                elif order:
                    conn.send(order[0])
                    running[conn] = (order.pop(0), process)
                else:
                    _end(conn, process, say)
            _raise_first_error(done)
    finally:
        _stop([process for _, process in running.values()])
    rows_at = {place: rows for i, unit in enumerate(todo) for place, rows in zip(unit, done[i][1], strict=True)}
    return [row for at, method in enumerate(methods)
            for piece in (range(len(parts[method])) if method in parts else [None]) for row in rows_at[at, piece]]


def _raise_first_error(done: dict[int, tuple[str, Any]]) -> None:
    """Raise the error of the first unit that failed once every unit before it has answered."""
    for i in range(len(done) + 1):
        if i not in done:
            return
        kind, value = done[i]
        if kind == "error":
            raise value


def _start(options: Any, runners: dict[str, Any], parts: dict[str, list[Any]], todo: list[Unit], i: int,
           running: dict[Any, tuple[int, Any]]) -> None:
    """Fork a worker on unit `i` and add it to `running` (before a Ctrl-C held meanwhile is raised)."""
    ours, theirs = multiprocessing.Pipe()
    # Not a daemon: a method may fork a pool of its own (the model check's workers).
    process = multiprocessing.get_context("fork").Process(target=_work, args=(options, runners, parts, todo, i, theirs))
    with interrupts_held():
        process.start()
        theirs.close()
        running[ours] = (i, process)


def _receive(conn: Any, process: Any) -> tuple[str, Any]:
    """The worker's next message: ("say", a progress line), or a unit's answer: ("rows", ...) or
    ("error", ...); ("died", the error) where the worker ended without answering."""
    try:
        answer: tuple[str, Any] = conn.recv()
    except EOFError:  # the worker died without answering (killed, or out of memory)
        conn.close()
        process.join()
        return "died", RuntimeError(f"a proof worker ended without an answer (exit status {process.exitcode})")
    return answer


def _end(conn: Any, process: Any, say: Callable[[str], None]) -> None:
    """Tell a worker there is no more work; say what it says as it ends (its CPU seconds)."""
    conn.send(None)
    while True:
        try:
            answer = conn.recv()
        except EOFError:
            break
        if answer[0] == "say":
            say(answer[1])
    conn.close()
    process.join()


def _work(options: Any, runners: dict[str, Any], parts: dict[str, list[Any]], todo: list[Unit], i: int | None,
          conn: Connection) -> None:
    """A worker: run unit `i` and each unit sent after it, sending their progress lines and then their
    rows (or the error); at the end (None sent) its CPU seconds, and end the process here (`posix._exit`:
    `os._exit` may be the caller's guard, which raises)."""
    signal.signal(signal.SIGINT, _ignore)
    signal.signal(signal.SIGTERM, _stop_worker)
    sys.unraisablehook = _stop_again

    def said(message: str) -> None:
        conn.send(("say", message))

    count = 0
    try:
        while i is not None:
            conn.send(_answer(options, runners, parts, todo[i], said))
            count += 1
            i = conn.recv()
        said(f"proof worker {os.getpid()}: {_cpu_seconds():.1f} s CPU over {count} units (its subprocesses included)")
    except (_Stopped, EOFError):
        pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        posix._exit(0)


def _answer(options: Any, runners: dict[str, Any], parts: dict[str, list[Any]], unit: Unit,
            said: Callable[[str], None]) -> tuple[str, Any]:
    """("rows", each piece's rows) of one unit, or ("error", the first error)."""
    try:
        return "rows", [runners[options.methods[at]](options, said) if piece is None
                        else parts[options.methods[at]][piece][1](options, said) for at, piece in unit]
    except _Stopped:
        raise
    except Exception as error:  # raised in the parent, as the serial run would
        return "error", _picklable(error)


def _cpu_seconds() -> float:
    """This process's CPU seconds and its waited-for subprocesses' (CrossHair's)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _ignore(signum: int, frame: Any) -> None:
    """Ctrl-C in a worker: the parent stops it (a Python handler, so exec'd children get the default)."""


_stopping: list[bool] = []  # set once this worker has been told to stop


def _stop_worker(signum: int, frame: Any) -> None:
    _stopping.append(True)
    raise _Stopped


def _stop_again(unraisable: Any) -> None:
    """A stop that landed in a finalizer (a Z3 term's `__del__`) is swallowed there, and Python would
    print it as a traceback and run on: the hook has another thread mark SIGTERM as arrived again (in
    this thread it would be handled here, inside the hook, and swallowed again), so that the stop is
    raised in the worker's own code, where it ends it. Once stopping, a finalizer's error (a Z3 term
    whose construction the stop cut short has no context to free) is not printed either."""
    if isinstance(unraisable.exc_value, _Stopped):
        _thread.start_new_thread(_thread.interrupt_main, (signal.SIGTERM,))
        return
    if not _stopping:
        sys.__unraisablehook__(unraisable)


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
