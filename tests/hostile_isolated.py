"""Schedulers that attack the oracle's process rather than the rules: they patch the monitor, disarm
its alarm, sit in one long C call, leave a non-daemon thread, fork, raise the user's signals or a bare
BaseException, crash the interpreter, or hand back a plan that reads differently on each look; the
paged and prefix designs' own (`Paged*`, `Prefix*`) hang in the same ways. The isolation tests load them
as `hostile_isolated:NAME` (this folder is on sys.path and PYTHONPATH)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from typing import Any

import stallfree.spec.reservation.monitor
from stallfree import paged, prefix
from stallfree.reference import Scheduler


class Rewrites(Scheduler):
    """The reference, its plan shown through `rewrite`; its own plan is what it completes."""

    def schedule(self) -> Any:
        self._own = super().schedule()
        return self.rewrite(list(self._own))

    def rewrite(self, plan: list[Any]) -> Any:
        return plan

    def complete(self, plan: Any, *stopped: Any) -> Any:
        return super().complete(self._own, *stopped)


class OverBudget(Rewrites):
    """Plans the budget more than its own plan on every step that plans anything (BUDGET broken)."""

    def rewrite(self, plan: list[Any]) -> Any:
        if plan:
            rid, tokens = plan[0]
            plan = [(rid, tokens + self.config.token_budget), *plan[1:]]
        return plan


class PatchesTheJudge(OverBudget):
    def rewrite(self, plan: list[Any]) -> Any:
        stallfree.spec.reservation.monitor.judge = lambda *args, **kwargs: None  # type: ignore[attr-defined]
        return super().rewrite(plan)


class DisarmsTheAlarm(Scheduler):
    def schedule(self) -> Any:
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.setitimer(signal.ITIMER_REAL, 0)
        while True:
            time.sleep(0.01)


class LongCCall(Scheduler):
    def schedule(self) -> Any:
        ctypes.CDLL(None).sleep(3600)  # one C call holding the thread; no signal handler runs meanwhile


class AlarmBlockedSleep:
    """LongCCall with SIGALRM blocked first: libc's sleep is not cut short by the alarm (EINTR), so no
    countdown in this process ends it; as a C extension's long loop that never looks at signals."""

    BLOCKED = frozenset({signal.SIGALRM})

    def schedule(self) -> Any:
        signal.pthread_sigmask(signal.SIG_BLOCK, self.BLOCKED)
        ctypes.CDLL(None).sleep(3600)


class LongCCallAlarmBlocked(AlarmBlockedSleep, Scheduler):
    pass


class LongCCallDeaf(LongCCallAlarmBlocked):
    """Blocks Ctrl-C's SIGINT too: only a kill from outside ends it."""

    BLOCKED = frozenset({signal.SIGALRM, signal.SIGINT})


class LeavesAThread(Scheduler):
    def __init__(self, **config: int) -> None:
        super().__init__(**config)
        threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()


class Forks(Scheduler):
    def schedule(self) -> Any:
        os.fork()
        return super().schedule()


class RaisesKeyboardInterrupt(Scheduler):
    def schedule(self) -> Any:
        raise KeyboardInterrupt


class SignalsItsOwnInterrupt(Scheduler):
    def schedule(self) -> Any:
        os.kill(os.getpid(), signal.SIGINT)
        return super().schedule()


class RaisesBaseException(Scheduler):
    def schedule(self) -> Any:
        raise BaseException("not an Exception")


class Segfaults(Scheduler):
    def schedule(self) -> Any:
        ctypes.string_at(0)  # reads address 0: SIGSEGV


class FickleList(list):  # type: ignore[type-arg]
    """A plan whose first iteration shows it under budget and every later one over it."""

    def __init__(self, items: Any, over: Any) -> None:
        super().__init__(items)
        self.over, self.looked = list(over), False

    def __iter__(self) -> Any:
        if not self.looked:
            self.looked = True
            return super().__iter__()
        return iter(self.over)


class FicklePlan(OverBudget):
    def rewrite(self, plan: list[Any]) -> Any:
        return FickleList(plan, super().rewrite(plan))


class GeneratorPlan(Rewrites):
    def rewrite(self, plan: list[Any]) -> Any:
        return (entry for entry in plan)


class TuplePlan(Rewrites):
    def rewrite(self, plan: list[Any]) -> Any:
        return tuple(plan)


class PagedHonest(paged.Scheduler):
    """The paged scheduler from outside stallfree, on 2-token blocks (small bounds): its rules hold."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, block_size=2, watermark=0)


class PrefixHonest(prefix.Scheduler):
    """The prefix-caching scheduler from outside stallfree, on 2-token blocks: its rules hold."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, block_size=2, watermark=0)


class LoopsInPython:
    """A schedule() that never returns, in Python code: the SIGALRM countdown stops it."""

    def schedule(self) -> Any:
        while True:
            pass


class PagedHangsInSchedule(LoopsInPython, PagedHonest):
    pass


class PagedLongCCallAlarmBlocked(AlarmBlockedSleep, PagedHonest):
    pass


class PrefixHangsInSchedule(LoopsInPython, PrefixHonest):
    pass


class PrefixLongCCallAlarmBlocked(AlarmBlockedSleep, PrefixHonest):
    pass


class SaysThenSticks(AlarmBlockedSleep, Scheduler):
    """Writes a line to stdout and one to stderr, then sticks in C as LongCCallAlarmBlocked does: what it
    wrote must reach the caller before the watchdog's line."""

    def schedule(self) -> Any:
        print("said on stdout before sticking", flush=True)
        print("said on stderr before sticking", file=sys.stderr, flush=True)
        return super().schedule()
