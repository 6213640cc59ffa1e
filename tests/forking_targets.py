"""Schedulers that fork inside the worker (tests/test_conformance_forks.py loads them as
`forking_targets:NAME`; this folder is on sys.path). Each is the reference except where it forks."""

from __future__ import annotations

import os
import time
from typing import Any

from stallfree.conformance.isolation import forked
from stallfree.reference import Scheduler

_forked = False  # once per worker: the copy, made with this set, never forks again


def _fork_once() -> bool:
    """Forks on the first call in this worker; True in the copy."""
    return _fork_once_pid() == 0


def _fork_once_pid() -> int | None:
    """Forks on the first call in this worker: fork()'s value (0 in the copy); None on later calls."""
    global _forked
    if _forked:
        return None
    _forked = True
    return os.fork()


class ForksAndLies(Scheduler):
    """Forks at its first schedule(); the copy plans a million tokens (a BUDGET break) from then on."""

    lies = False

    def schedule(self) -> Any:
        if _fork_once():
            ForksAndLies.lies = True
        return [(0, 1_000_000)] if self.lies else super().schedule()


class ForksAndLiesUnseen(ForksAndLies):
    """The control: the copy also undoes the worker's marks (as a worker without them would be), so
    that it answers as the worker: the runs' verdicts show the copy's break."""

    def schedule(self) -> Any:
        plan = super().schedule()
        if self.lies:
            forked.IN_CHILD, forked.WORKER = False, os.getpid()
        return plan


def _sleep_in_copy(leave_group: bool) -> None:
    """Forks once; the worker notes the copy's process id where the test says, once the copy is settled
    (out of the group first, where it leaves), and goes on; the copy sleeps, never returning."""
    settled, tell = os.pipe()
    pid = _fork_once_pid()
    if pid is None:
        os.close(settled)
        os.close(tell)
        return
    if pid == 0:
        if leave_group:
            os.setsid()
        os.write(tell, b"x")
        while True:
            time.sleep(60)
    os.read(settled, 1)  # the copy is settled
    os.close(settled)
    os.close(tell)
    with open(os.environ["STALLFREE_TEST_PID_FILE"], "w") as out:
        out.write(str(pid))


class ForksASleeper(Scheduler):
    """Forks at its first complete(); the copy sleeps on, in the worker's process group."""

    def complete(self, *args: Any) -> Any:
        _sleep_in_copy(leave_group=False)
        return super().complete(*args)


class ForksASleeperThatLeaves(Scheduler):
    """As ForksASleeper, but the copy leaves the worker's process group (setsid): out of the kit's reach."""

    def complete(self, *args: Any) -> Any:
        _sleep_in_copy(leave_group=True)
        return super().complete(*args)
