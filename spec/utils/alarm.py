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


class Alarm:
    """Raise `expired()` in the main thread once `seconds` pass without a `rearm()`; a context manager.

    `seconds=None` is no limit. `outer_first`: if a caller's alarm is already due no later than this
    one, this one is not armed and the caller's fires first, as it would have without it.
    `counting=False`: the handler is held from entry but the countdown waits for the first `rearm()`,
    and `stop()` ends it until the next, so a block can time some stretches of itself and not others
    (installing a handler costs far more than setting the timer). On exit the countdown is cancelled
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

    def _fire(self, signum: int, frame: FrameType | None) -> None:
        error = self.expired()
        error.alarm_expired = True  # type: ignore[attr-defined]  # see `expired`
        raise error

    def rearm(self) -> None:
        """Start the countdown again from `seconds` (nothing, where the alarm is not armed)."""
        if self.armed and self.seconds is not None:
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def stop(self) -> None:
        """End the countdown, keeping the handler: nothing fires until the next `rearm()`."""
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def __enter__(self) -> Alarm:
        if self.seconds is None or threading.current_thread() is not threading.main_thread():
            return self
        outer = signal.getitimer(signal.ITIMER_REAL)[0]
        if self.outer_first and 0 < outer <= self.seconds:
            return self
        self.previous = signal.signal(signal.SIGALRM, self._fire)
        self.outer, self.entered_at, self.armed = outer, time.monotonic(), True
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
            self.armed = False
            signal.signal(signal.SIGALRM, self.previous)
            if self.outer > 0:
                left = self.outer - (time.monotonic() - self.entered_at)
                signal.setitimer(signal.ITIMER_REAL, max(left, MIN_RESTORE_S))


def expired(error: BaseException) -> bool:
    """Whether `error` is an alarm's expiry: the limit of the run it interrupted, wherever it landed (in a
    factory call, a view), not a failure of the code that was running then, so that code's own handler
    must let it through."""
    return getattr(error, "alarm_expired", False) is True
