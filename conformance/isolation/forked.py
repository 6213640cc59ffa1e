"""A child the target forks inside the worker ends where it comes back into the worker's code.

fork(2) copies the worker whole: a child that returns from the target's call would play the rest of
the workload, write a second answer into the kit's pipe and read the kit's next request, so a run
could be judged on the copy's answer. The worker marks itself here (`watch`); from then on a child
made with os.fork is marked at birth, and the guard ends it (`REAL_EXIT`, silently, no atexit, no
flush of what it inherited) the moment one of the target's calls returns or raises in it. The worker
also compares its process id (`WORKER`) before each line it writes, for a child forked in the target's
import or from C, which the guard or the hook does not see.
A child that never returns (it runs on, or sleeps) is ended with the worker's process group
(`sandbox.Sandbox.close`).
"""

from __future__ import annotations

import os

REAL_EXIT = os._exit  # kept before any target is imported: a target may replace os._exit
IN_CHILD = False  # True in a child forked from the worker (after `watch`); never set in the kit's process
WORKER: int | None = None  # the worker's process id (after `watch`): only it answers the kit


def watch() -> None:
    """Mark every child forked from this process from now on (the worker calls it once, at its start)."""
    global WORKER
    WORKER = os.getpid()
    os.register_at_fork(after_in_child=_mark)


def _mark() -> None:
    global IN_CHILD
    IN_CHILD = True


def end_copy() -> None:
    """Ends this process silently: a copy of the worker made by the target's fork."""
    REAL_EXIT(0)
