"""A watchdog from outside over `prove --scheduler`, whose model check must run the user's scheduler in
the process that copies it (`timed`): the prove work runs in a forked child, in a process group of its
own, and this process watches it. Every process that runs a timed call (the child, its method-group
workers, the model checker's pool) marks "call NAME started at T" in its slot of a `Board`, shared
memory made before the fork, and clears it when the call returns. A call still marked `GRACE_S` past
--timeout was not stopped by the SIGALRM countdown (it is stuck in C, where no signal handler runs): this
process kills the child's group and exits 3 with the countdown's own line. Otherwise it exits with the
child's status; a Ctrl-C here is passed to the child, which ends as it would in this process. Where the
caller's output is no file the child can write to (captured in memory), the child's goes through pipes
that this process relays into the caller's streams (`relayed`): the same output, the verdict's line last."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import mmap
import os
import posix
import signal
import struct
import sys
import tempfile
import time
import weakref
from collections.abc import Callable
from typing import TextIO

from .. import exits
from .relayed import Relay

SLOTS = 256  # processes marking calls at once; one past them runs with its SIGALRM countdown alone
NAME_BYTES = 24
SLOT = struct.Struct(f"qd{NAME_BYTES}s")  # the owner's pid, the monotonic second its call started (0: none), the call
SINCE, SLOT_SINCE = struct.Struct("d"), 8  # the start's field alone, and where it lies in a slot
GRACE_S = 2.0  # past --timeout, the countdown's chance to stop the call itself; then the group is killed
POLL_S = 0.1  # how often the watchdog looks


class Board:
    """The calls in progress, one slot per process (claimed at its first call, under a lock that a
    process's death releases); the clock is the system's monotonic one, the same in every process."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115  # held as long as the board
        self._file.truncate(SLOTS * SLOT.size)
        self._map = mmap.mmap(self._file.fileno(), SLOTS * SLOT.size)
        self._owner = 0
        self._claimed = False  # whether this process has looked for its slot (`_at`, None if all taken)
        self._at: int | None = None
        self._names: dict[str, bytes] = {}
        os.register_at_fork(after_in_child=functools.partial(_forked, weakref.ref(self)))

    def started(self, call: str) -> None:
        if not self._claimed:  # the first call in this process (a worker forked since): its own slot
            self._claimed, self._owner = True, os.getpid()
            self._at = self._claim(self._owner)
        if self._at is not None:
            name = self._names.get(call) or self._names.setdefault(call, call.encode()[:NAME_BYTES])
            SLOT.pack_into(self._map, self._at * SLOT.size, self._owner, time.monotonic(), name)

    def ended(self) -> None:
        """Clears the call (in a process forked during it, a scheduler's, nothing: the slot is its parent's)."""
        if self._at is not None:
            SINCE.pack_into(self._map, self._at * SLOT.size + SLOT_SINCE, 0.0)

    def _claim(self, pid: int) -> int | None:
        fcntl.lockf(self._file.fileno(), fcntl.LOCK_EX)
        try:
            for at in range(SLOTS):
                owner = SLOT.unpack_from(self._map, at * SLOT.size)[0]
                if owner == 0 or not _alive(owner):
                    SLOT.pack_into(self._map, at * SLOT.size, pid, 0.0, b"")
                    return at
            return None
        finally:
            fcntl.lockf(self._file.fileno(), fcntl.LOCK_UN)

    def overdue(self, seconds: float) -> str | None:
        """A call of a living process in progress for more than `seconds`, or None."""
        now = time.monotonic()
        for at in range(SLOTS):
            owner, since, call = SLOT.unpack_from(self._map, at * SLOT.size)
            if owner and since and now - since > seconds and _alive(owner):
                return call.rstrip(b"\0").decode(errors="replace")
        return None


def _forked(board: weakref.ReferenceType[Board]) -> None:
    """In a forked process: its first call claims a slot of its own (not its parent's)."""
    alive = board()
    if alive is not None:
        alive._claimed, alive._at = False, None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a pid reused by another user's process: not ours, not alive for us
        return False
    return True


def inherited(stream: object) -> bool:
    """Whether a child writing to `stream` and stderr reaches their reader: both are files (a caller that
    captured them in memory, a test, is reached through a `Relay`)."""
    try:
        return stream.fileno() >= 0 and sys.stderr.fileno() >= 0  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        return False


def supervise(work: Callable[[TextIO], int], board: Board, seconds: float, hung: Callable[[str], str],
              ended: Callable[[BaseException], int], who: str, out: TextIO) -> int:
    """`work(stream)`'s status, run in a forked child that writes its output to `stream` (`out` itself,
    or the pipe relayed into it); `hung(call)` is the line printed, and 3 the status, if a call outlasts
    `seconds` plus the grace; `ended(error)` is the status of what `work` raised; `who` names what
    crashed if a signal kills the child."""
    sys.stdout.flush()
    sys.stderr.flush()
    relay = None if inherited(out) else Relay(out, sys.stderr)
    # Ctrl-C held until the child has its group and this process its `finally`, which ends that group.
    unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    pid = os.fork()
    if pid == 0:
        _child(lambda: work(_relayed(relay, out)), ended, unblocked)
    watched = _Watched(pid, relay)
    try:
        with contextlib.suppress(OSError):  # the child does it too: whichever comes first
            os.setpgid(pid, pid)
        signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
        if relay is not None:
            relay.parent()
        return _watch(watched, board, seconds + GRACE_S, hung, who)
    finally:
        watched.end()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _relayed(relay: Relay | None, out: TextIO) -> TextIO:
    """In the child: the stream its output goes to; relayed, stderr (and stdout where it was `out`, not
    the report dropped under --json -) are the pipes'."""
    if relay is None:
        return out
    piped, sys.stderr = relay.child()
    if sys.stdout is out:
        sys.stdout = piped
    return piped


class _Watched:
    """The child's group: `end` kills what is left of it and relays the last of its output."""

    def __init__(self, pid: int, relay: Relay | None) -> None:
        self.pid, self.relay = pid, relay

    def end(self) -> None:
        with contextlib.suppress(OSError):  # nothing of the child's outlives the verdict
            os.killpg(self.pid, signal.SIGKILL)
        if self.relay is not None:
            self.relay.drain(POLL_S)

    def wait(self) -> None:
        """`POLL_S`, relaying the child's output meanwhile."""
        if self.relay is None:
            time.sleep(POLL_S)
            return
        until = time.monotonic() + POLL_S
        while (left := until - time.monotonic()) > 0:
            self.relay.pump(left)


def _child(work: Callable[[], int], ended: Callable[[BaseException], int], unblocked: set[signal.Signals]) -> None:
    code = exits.CRASHED
    try:
        os.setpgid(0, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
        code = work()
    except BaseException as error:  # ended here as the command would have ended it
        with contextlib.suppress(BaseException):
            code = ended(error)
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        posix._exit(code)  # never the caller's code after the fork (`os._exit` may be the caller's guard)


def _watch(watched: _Watched, board: Board, limit: float, hung: Callable[[str], str], who: str) -> int:
    """The child's status, or 3 once a call of its group is overdue; a Ctrl-C is passed to the group,
    which has `GRACE_S` to end before it is killed and the interrupt raised here. Each line printed
    here follows all the child wrote."""
    pid = watched.pid
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                watched.end()
                return _status(status, who)
            call = board.overdue(limit)
            if call is not None:
                watched.end()
                print(hung(call), file=sys.stderr)
                return exits.CRASHED
            watched.wait()
    except KeyboardInterrupt:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGINT)
        for _ in range(int(GRACE_S / POLL_S)):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                watched.end()
                return _status(status, who)
            watched.wait()
        raise


def _status(status: int, who: str) -> int:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # killed by a signal the scheduler's code brought on itself (SIGSEGV, SIGKILL)
        print(f"{who} crashed: the model check's process was killed by {signal.Signals(-code).name}",
              file=sys.stderr)
        return exits.CRASHED
    return code
