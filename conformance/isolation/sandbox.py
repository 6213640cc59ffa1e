"""The kit's side of the worker process: send a workload, get an Outcome, whatever the target does.

Three clocks guard the target. Inside the worker each call has `timeout` seconds (SIGALRM). Here, the
import has `load_timeout` seconds and each run `run_timeout` seconds (both set by argument, variable or
default: `timeouts`): a target stuck where a signal cannot reach it (a C loop, a swallowed timeout) is
asked for its traceback and killed, and the next run starts a fresh worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from stallfree.spec import Workload
from stallfree.spec.utils.loader import TargetError, split_target

from .outcome import CRASH, TIMEOUT, Outcome
from .timeouts import load_timeout as load_timeout_of
from .timeouts import run_timeout as run_timeout_of
from .worker import DUMP_SIGNAL

DEFAULT_TIMEOUT = 2.0  # seconds a single call to the target may take
DUMP_GRACE = 0.5  # seconds the worker has to write its traceback before it is killed
STDERR_TAIL = 4000  # characters of the worker's stderr kept in a report


class Sandbox:
    """A worker process that has imported `target`. Use as a context manager."""

    def __init__(
        self, target: str, timeout: float = DEFAULT_TIMEOUT, run_timeout: float | None = None,
        contract: str | None = None, load_timeout: float | None = None,
    ) -> None:
        split_target(target)  # a malformed target is an argument error, before any process starts
        self.target = target
        self.contract = contract  # the contract by name (stallfree.spec.registry); None: the target's design
        self.timeout = timeout
        self.run_timeout = run_timeout_of(run_timeout, timeout)
        self.load_timeout = load_timeout_of(load_timeout)
        self.num_restarts = 0
        self.capabilities: frozenset[str] = frozenset()  # what the target supports beyond the plain protocol
        self._proc: subprocess.Popen[bytes] | None = None
        # Lives as long as the sandbox. O_APPEND, so truncating it between runs is safe.
        self._stderr = tempfile.TemporaryFile(mode="a+b")  # noqa: SIM115
        self._buffer = b""

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._stderr.close()

    # -- the worker's life --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start a worker and import the target in it. Raises TargetError if that fails."""
        self._clear_stderr()
        self._buffer = b""
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "stallfree.conformance.isolation.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, cwd=os.getcwd(),
            start_new_session=True,  # its own process group: whatever the target forks ends with it (close)
        )
        sys_path = [p if p else os.getcwd() for p in sys.path]
        self._send({"target": self.target, "contract": self.contract, "sys_path": sys_path})
        reply = self._receive(self.load_timeout)
        if reply is None or "ready" not in reply:
            why = (reply or {}).get("load_error")
            if why is None:  # it hung or died: name the target, and where it was stuck
                ended = self._ended_why(self.load_timeout, "importing it").partition(" (stopped from outside")[0]
                stuck = _innermost_frame(self._stderr_tail())
                why = f"target {self.target!r}: {ended}" + (f"; it was at {stuck}" if stuck else "")
            self._kill()
            raise TargetError(str(why))
        self.not_applicable: dict[str, str] = reply.get("not_applicable") or {}
        self.capabilities = frozenset(reply.get("capabilities") or ())

    def close(self) -> None:
        """Stop the worker, and every process the target forked in it (the worker's process group); the
        stderr file stays, for a report."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        end_group(proc.pid)

    # -- one run --------------------------------------------------------------------------------------------

    def run(self, workload: Workload, rules: list[str], known: list[str] | None = None) -> Outcome:
        """Play `workload` in the worker, checking `rules` (and `known`, rules already found broken, where
        the run is cut short, see `worker.run_one`); the Outcome of the run, never an exception from the
        target."""
        if self._proc is None:
            self.start()
            self.num_restarts += 1
        self._clear_stderr()
        self._send({"workload": workload.to_json(), "rules": rules, "known": known or [], "timeout": self.timeout})
        reply = self._receive(self.run_timeout)
        if reply is not None:
            return Outcome.from_json(reply)
        alive = self._proc is not None and self._proc.poll() is None
        why = self._ended_why(self.run_timeout, "the run")
        self._kill()
        if alive:
            return Outcome(TIMEOUT, None, why, "", self._stderr_tail())
        return Outcome(CRASH, None, why, "", self._stderr_tail())

    def _ended_why(self, waited: float, doing: str) -> str:
        proc = self._proc
        if proc is None or proc.poll() is None:
            if proc is not None:
                proc.send_signal(DUMP_SIGNAL)  # the worker writes every thread's traceback to stderr
                time.sleep(DUMP_GRACE)
            return f"{doing} did not finish within {waited:g} s (stopped from outside; traceback below)"
        return f"the worker process ended during {doing} with exit code {proc.returncode}"

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        self.close()

    # -- the pipe ------------------------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(message).encode() + b"\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # the worker is gone; _receive sees the end of its output

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        """The next JSON line from the worker, or None if it ended or `timeout` passed."""
        assert self._proc is not None and self._proc.stdout is not None
        try:
            line, self._buffer = next_line(self._proc.stdout.fileno(), self._buffer, timeout)
        except EOFError:
            self._proc.wait()
            return None
        return None if line is None else json.loads(line)  # type: ignore[no-any-return]

    def _clear_stderr(self) -> None:
        if os.fstat(self._stderr.fileno()).st_size:  # most runs print nothing: a look costs less than a truncate
            self._stderr.truncate(0)

    def _stderr_tail(self) -> str:
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - STDERR_TAIL))
        return self._stderr.read().decode(errors="replace")


def end_group(pgid: int) -> None:
    """Kill what is left of the worker's process group (a child the target forked that never came back
    into the worker: it runs on or sleeps). The group's id is not given to another process while a
    member lives; with none left there is nothing to kill. A child that left the group itself (setsid)
    is out of reach."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # none left
        os.killpg(pgid, signal.SIGKILL)


def next_line(fd: int, buffer: bytes, timeout: float) -> tuple[bytes | None, bytes]:
    """The next line read from `fd` after the bytes of `buffer`, and the bytes left after it; None for
    the line if `timeout` seconds passed first. EOFError at the end of the output. Waits with poll(2),
    one system call a wait (an epoll selector costs four, and the kit waits once a run, trace once a call)."""
    deadline = time.monotonic() + timeout
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while b"\n" not in buffer:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):  # milliseconds, rounded up
            return None, buffer
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise EOFError
        buffer += chunk
    line, _, buffer = buffer.partition(b"\n")
    return line, buffer


def _innermost_frame(dump: str) -> str:
    """The first `File "...", line N in f` of a faulthandler dump (most recent call first)."""
    for line in dump.splitlines():
        line = line.strip()
        if line.startswith("File "):
            return line
    return ""
