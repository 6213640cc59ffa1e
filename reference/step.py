"""The step record: the step the scheduler is at, its plan while in flight, and what ended around it."""

from __future__ import annotations

from dataclasses import dataclass, field

from stallfree.spec.types import Plan

from .progress import Phase
from .sequence import Sequence


@dataclass(slots=True)
class Step:
    """Step `number` (the count of plans completed) from schedule() to complete(). A running request
    cancelled while `plan` is pending is in `cancelled` and ends when the plan completes (cancels wait
    only while a plan is pending); `ended` holds the requests that ended in the step before, and those
    cancelled since, until the next complete() (the bounded record `ended` and `progress` read)."""

    number: int
    plan: Plan | None = None  # schedule()'s plan, until complete() takes it
    cancelled: dict[int, Sequence] = field(default_factory=dict)
    ended: dict[int, tuple[Sequence, Phase]] = field(default_factory=dict)
