"""A Ctrl-C that CPython drops is delivered again.

The KeyboardInterrupt of a Ctrl-C is raised in whatever Python code runs when the signal is taken. Where
that code's exceptions cannot go anywhere (a weakref callback, such as the import system's clean-up of a
module lock; a `__del__`), CPython prints "Exception ignored in ..." through `sys.unraisablehook` and
goes on: the command would run to its end as if nobody had pressed Ctrl-C (`prove --methods z3`, taken
while Z3 was being imported, ran on past a 300 s wait). Under `kept()`, such a KeyboardInterrupt is
sent again as a fresh SIGINT, from a thread a moment later, so that it lands once the dropping code has
returned; if it lands in such code again, it is sent again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

AGAIN_S = 0.01  # how long after a dropped Ctrl-C it is sent again: long enough to leave a callback


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Within this block a KeyboardInterrupt that CPython drops as unraisable is sent again as SIGINT,
    where a Python handler takes SIGINT (one that ignores it ignores it again); others go to the hook
    that was in place."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and callable(signal.getsignal(signal.SIGINT)):
            again()
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def again() -> None:
    """SIGINT to this process, `AGAIN_S` from now, from a daemon thread: one sent from the hook itself
    would be taken before the hook returned, in the code that drops it."""
    timer = threading.Timer(AGAIN_S, os.kill, (os.getpid(), signal.SIGINT))
    timer.daemon = True
    timer.start()
