"""One in-process timer: SIGALRM stops Python code that runs too long (a loop, a sleep) where it is.

The one alarm every layer uses: the trace command's watchdog over a scheduler, the executor's limit
on a run in this process, and the conformance worker's limit on each call to the target. Standard
library only, so the lowest layer holds it and every layer may import it.

Signals reach the main thread only: entered from another thread, an alarm does nothing. Entered
while a caller's alarm is pending (a test runner's, an outer `Alarm`), it takes that alarm's place
and gives it back on exit, with its handler and less the time spent inside; the interval of a
repeating outer timer is not kept.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

MIN_RESTORE_S = 1e-3  # an outer alarm that fell due while this one ran fires this soon after exit
MIN_LEFT_S = 1e-6  # a countdown set again for what is left: never 0, which would cancel it


class Alarm:
    """Raise `expired()` in the main thread once `seconds` pass without a `rearm()`; a context manager.

    `seconds=None` is no limit. `outer_first`: if a caller's alarm is already due no later than this
    one, this one is not armed and the caller's fires first, as it would have without it.
    `counting=False`: the handler is held from entry but the countdown waits for the first `rearm()`,
    and `stop()` ends it until the next, so a block can time some stretches of itself and not others
    (installing a handler costs far more than setting the timer). Such stretches are many and short (each
    call to a scheduler under test), so they cost no system call: `rearm()` notes the stretch's deadline
    and sets the timer only where none is set, `stop()` clears the deadline, and the timer, when it
    fires, raises only if the stretch in progress is past its deadline; before it, it is set again for
    what is left, and between stretches it stays off until the next `rearm()`. On exit the countdown is cancelled
    (nothing fires after the block), and the previous handler and timer are given back, also when the
    block raised (a Ctrl-C's KeyboardInterrupt, the expiry itself)."""

    def __init__(self, seconds: float | None, expired: Callable[[], BaseException],
                 outer_first: bool = False, counting: bool = True) -> None:
        self.seconds = seconds
        self.expired = expired
        self.outer_first = outer_first
        self.counting = counting
        self.armed = False  # whether this alarm holds SIGALRM now
        self.previous: Any = None  # the handler it took over
        self.outer = 0.0  # seconds the caller's alarm had left at entry; 0 if none
        self.entered_at = 0.0  # time.monotonic() at entry
        self.due: float | None = None  # not counting: the deadline of the stretch in progress, None between
        self.ticking = False  # not counting: whether the timer is set

    def _fire(self, signum: int, frame: FrameType | None) -> None:
        if not self.counting:
            due = self.due
            if due is None:  # between stretches: off until the next rearm()
                self.ticking = False
                return
            left = due - time.monotonic()
            if left > 0:  # set at an earlier stretch: this one has time left
                signal.setitimer(signal.ITIMER_REAL, max(left, MIN_LEFT_S))
                return
            self.due, self.ticking = None, False
        error = self.expired()
        error.alarm_expired = True  # type: ignore[attr-defined]  # see `expired`
        raise error

    def rearm(self) -> None:
        """Start the countdown again from `seconds` (nothing, where the alarm is not armed)."""
        if not self.armed or self.seconds is None:
            return
        if self.counting:
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            return
        self.due = time.monotonic() + self.seconds
        if not self.ticking:
            self.ticking = True
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def stop(self) -> None:
        """End the countdown, keeping the handler: nothing fires until the next `rearm()`."""
        if not self.armed:
            return
        if self.counting:
            signal.setitimer(signal.ITIMER_REAL, 0)
        else:
            self.due = None

    def __enter__(self) -> Alarm:
        if self.seconds is None or threading.current_thread() is not threading.main_thread():
            return self
        outer = signal.getitimer(signal.ITIMER_REAL)[0]
        if self.outer_first and 0 < outer <= self.seconds:
            return self
        self.previous = signal.signal(signal.SIGALRM, self._fire)
        self.outer, self.entered_at, self.armed = outer, time.monotonic(), True
        self.due, self.ticking = None, self.counting
        # Not counting yet, the caller's countdown is cancelled too (its handler is no longer in place);
        # exit gives it back less the time spent inside.
        signal.setitimer(signal.ITIMER_REAL, self.seconds if self.counting else 0)
        return self

    def __exit__(self, *_: object) -> None:
        if not self.armed:
            return
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:  # an expiry delivered just as the countdown is cancelled still gives everything back
            self.armed, self.due, self.ticking = False, None, False
            signal.signal(signal.SIGALRM, self.previous)
            if self.outer > 0:
                left = self.outer - (time.monotonic() - self.entered_at)
                signal.setitimer(signal.ITIMER_REAL, max(left, MIN_RESTORE_S))


def expired(error: BaseException) -> bool:
    """Whether `error` is an alarm's expiry: the limit of the run it interrupted, wherever it landed (in a
    factory call, a view), not a failure of the code that was running then, so that code's own handler
    must let it through."""
    return getattr(error, "alarm_expired", False) is True
