"""The one in-process timer (stallfree.spec.utils.alarm): it fires, it stops firing at exit, and it gives the
previous handler and timer back, nested or not, raised out of or not. The timer the test runner keeps
(pytest-timeout) is put back after each.

No test bounds how long anything took: a block that must be cut sleeps for FOREVER, so only the
alarm ends it (or the test runner's limit fails it), and a countdown is compared only with what
sleeping guarantees (a sleep of t takes at least t), so a loaded machine cannot fail a test."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import nullcontext
from types import FrameType

import pytest

from stallfree.spec.utils.alarm import Alarm

SHORT = 0.05  # an alarm meant to fire inside the test
LONG = 600.0  # an alarm meant never to fire inside the test
FOREVER = 3600.0  # a sleep only an alarm ends


class Expired(BaseException):
    pass


class Inner(BaseException):
    pass


class Bell:
    """A SIGALRM handler that counts its rings and raises nothing: a caller's own alarm."""

    def __init__(self) -> None:
        self.rings = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.rings += 1


@pytest.fixture(autouse=True)
def bell() -> Iterator[Bell]:
    """The caller's handler, in place of the test runner's, with no timer pending."""
    runner_handler = signal.getsignal(signal.SIGALRM)
    runner_timer = signal.setitimer(signal.ITIMER_REAL, 0)[0]
    caller = Bell()
    signal.signal(signal.SIGALRM, caller)
    yield caller
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, runner_handler)
    if runner_timer > 0:
        signal.setitimer(signal.ITIMER_REAL, runner_timer)


def pending() -> float:
    return signal.getitimer(signal.ITIMER_REAL)[0]


def test_expiry_raises_the_given_error_where_the_block_is() -> None:
    with pytest.raises(Expired), Alarm(SHORT, Expired):
        time.sleep(FOREVER)


def test_nothing_fires_after_exit(bell: Bell) -> None:
    with Alarm(SHORT, Expired):
        pass
    assert pending() == 0
    time.sleep(3 * SHORT)  # an Expired here fails the test
    assert bell.rings == 0


@pytest.mark.parametrize("how", ["returns", "expires", "Ctrl-C"])
def test_the_previous_handler_and_timer_are_given_back(bell: Bell, how: str) -> None:
    signal.setitimer(signal.ITIMER_REAL, LONG)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    raised = pytest.raises(Expired if how == "expires" else KeyboardInterrupt) if how != "returns" else nullcontext()
    with raised, Alarm(SHORT if how == "expires" else LONG, Expired):
        assert signal.getsignal(signal.SIGALRM) is not bell
        time.sleep(SHORT)
        if how == "Ctrl-C":
            os.kill(os.getpid(), signal.SIGINT)
        if how != "returns":
            time.sleep(FOREVER)
    assert signal.getsignal(signal.SIGALRM) is bell
    assert 0 < pending() <= LONG - SHORT  # the caller's, less the time spent inside


def test_an_outer_alarm_due_inside_fires_just_after_exit(bell: Bell) -> None:
    signal.setitimer(signal.ITIMER_REAL, SHORT)
    with Alarm(LONG, Expired):
        time.sleep(3 * SHORT)
        assert bell.rings == 0  # the alarm took the caller's place: not timed, its handler is not installed here
    wait_for_ring(bell)
    assert bell.rings == 1


def wait_for_ring(bell: Bell) -> None:
    """Sleep until the caller's handler has rung, or LONG has passed (then the caller's assert fails)."""
    for _ in range(int(LONG / SHORT)):
        if bell.rings:
            return
        time.sleep(SHORT)


def test_nested_alarms_each_fire_their_own_and_give_the_outer_back() -> None:
    outer = 2.0  # the inner one must fire first: SHORT, so with margin on any machine
    with pytest.raises(Expired), Alarm(outer, Expired):
        with pytest.raises(Inner), Alarm(SHORT, Inner):
            time.sleep(FOREVER)
        assert 0 < pending() <= outer - SHORT  # the outer's countdown, less the time spent inside
        time.sleep(FOREVER)
    with pytest.raises(Expired), Alarm(SHORT, Expired):
        with Alarm(LONG, Inner):
            pass
        time.sleep(FOREVER)  # the outer's countdown goes on after the inner's exit


def test_rearm_starts_the_countdown_again(monkeypatch: pytest.MonkeyPatch) -> None:
    armed: list[float] = []  # every countdown the alarm sets, in order (read, not timed)
    real = signal.setitimer

    def recording(which: int, seconds: float, interval: float = 0.0) -> tuple[float, float]:
        armed.append(seconds)
        return real(which, seconds, interval)

    with Alarm(LONG, Expired) as alarm:
        time.sleep(3 * SHORT)
        assert pending() <= LONG - 3 * SHORT  # sleeping guarantees the countdown has moved
        monkeypatch.setattr(signal, "setitimer", recording)
        alarm.rearm()
        monkeypatch.undo()
        assert armed == [LONG]  # started again from the full limit, not from what was left
    with Alarm(SHORT, Expired) as alarm:
        alarm.rearm()
        with pytest.raises(Expired):
            time.sleep(FOREVER)


def test_not_counting_holds_the_handler_and_times_only_from_rearm_to_stop(bell: Bell) -> None:
    with Alarm(SHORT, Expired, counting=False) as alarm:
        assert signal.getsignal(signal.SIGALRM) is not bell
        time.sleep(3 * SHORT)  # not counting yet
        alarm.rearm()
        alarm.stop()
        time.sleep(3 * SHORT)  # stopped
        alarm.rearm()
        with pytest.raises(Expired):
            time.sleep(FOREVER)
    assert signal.getsignal(signal.SIGALRM) is bell


def test_not_counting_holds_back_a_callers_alarm_too(bell: Bell) -> None:
    signal.setitimer(signal.ITIMER_REAL, SHORT)
    with Alarm(LONG, Expired, counting=False):
        time.sleep(3 * SHORT)  # neither the caller's handler nor this alarm's may fire here
        assert bell.rings == 0
    wait_for_ring(bell)
    assert bell.rings == 1


def test_outer_first_leaves_a_sooner_caller_alarm_to_fire(bell: Bell) -> None:
    signal.setitimer(signal.ITIMER_REAL, SHORT)
    with Alarm(LONG, Expired, outer_first=True) as alarm:
        wait_for_ring(bell)  # the caller's fires where it is due, inside
        assert bell.rings == 1
        alarm.rearm()  # not armed: nothing to rearm
    assert signal.getsignal(signal.SIGALRM) is bell and pending() == 0


def test_outer_first_arms_when_the_caller_alarm_is_later(bell: Bell) -> None:
    signal.setitimer(signal.ITIMER_REAL, LONG)
    with pytest.raises(Expired), Alarm(SHORT, Expired, outer_first=True):
        time.sleep(FOREVER)
    assert signal.getsignal(signal.SIGALRM) is bell and 0 < pending() <= LONG - SHORT


def test_no_limit_touches_nothing(bell: Bell) -> None:
    signal.setitimer(signal.ITIMER_REAL, LONG)
    with Alarm(None, Expired) as alarm:
        assert signal.getsignal(signal.SIGALRM) is bell
        alarm.rearm()
        assert 0 < pending() < LONG  # the caller's, running down, not rearmed
    assert signal.getsignal(signal.SIGALRM) is bell and not alarm.armed


def test_outside_the_main_thread_it_does_nothing(bell: Bell) -> None:
    seen: list[object] = []

    def run() -> None:
        try:
            with Alarm(SHORT, Expired) as alarm:
                seen.append(alarm.armed)
                time.sleep(3 * SHORT)
            seen.append("done")
        except BaseException as error:  # anything here fails the test below
            seen.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(LONG)
    assert seen == [False, "done"]
    assert signal.getsignal(signal.SIGALRM) is bell and pending() == 0



def test_an_expiry_inside_a_factory_is_the_runs_limit_not_the_factorys_failure() -> None:
    from stallfree.spec.utils.alarm import Alarm, expired
    from stallfree.spec.utils.loader import FactoryError, guarded

    def slow(**config: int) -> object:
        signal.raise_signal(signal.SIGALRM)  # the run's alarm falls due while the factory runs
        return object()

    limit = Alarm(60, lambda: TimeoutError("the run's limit"))
    with pytest.raises(TimeoutError, match="the run's limit") as raised, limit:
        guarded(slow, "m:F")(token_budget=1, max_seqs=1, kv_tokens=1)
    assert expired(raised.value)

    def own(**config: int) -> object:  # the control: a factory's own TimeoutError is its failure
        raise TimeoutError("its own")

    with pytest.raises(FactoryError, match="raised TimeoutError: its own"):
        guarded(own, "m:F")(token_budget=1, max_seqs=1, kv_tokens=1)
    assert not expired(TimeoutError("its own"))
