"""A scheduler seen through a thin wrapper that times its calls and keeps what it last returned.

The monitor drives the wrapper as it would the scheduler: every attribute it reads (free_kv, views,
block_size, ...) is the scheduler's own, and the capabilities are the scheduler's. The wrapper lets
`Live` tell the scheduler's time from the monitor's, and keep a plan the monitor refused to pass on
(log mode).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from stallfree.spec.capability import supports


class Timed:
    """`scheduler`, with its schedule/complete/add/cancel timed (`spent_ns`, since `reset`)."""

    def __init__(self, scheduler: Any) -> None:
        self.target = scheduler
        self.stallfree_capabilities = supports(scheduler)
        self.stallfree_name = type(scheduler).__name__
        self.spent_ns = 0
        self.last_plan: Any = None
        self.last_emitted: Any = ()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["target"], name)

    def reset(self) -> None:
        self.spent_ns = 0

    def _timed(self, call: Any, *args: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return call(*args)
        finally:
            self.spent_ns += time.perf_counter_ns() - start

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        self._timed(self.target.add, rid, prompt_len, max_new)

    def cancel(self, rid: int) -> None:
        self._timed(self.target.cancel, rid)

    def schedule(self) -> Any:
        self.last_plan = self._timed(self.target.schedule)
        return self.last_plan

    def complete(self, plan: Any, stopped: Iterable[int] = ()) -> Any:
        stopped = tuple(stopped)
        args = (plan, stopped) if stopped else (plan,)
        self.last_emitted = self._timed(self.target.complete, *args)
        return self.last_emitted
