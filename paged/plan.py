"""The paged design's plan: the plain protocol's entries, plus the requests this step preempted."""

from __future__ import annotations

from dataclasses import dataclass

from stallfree.spec.types import Plan


@dataclass(frozen=True, slots=True)
class PagedPlan(Plan):
    """A `Plan` (it iterates as (rid, n) pairs) that also names the requests whose blocks were taken
    back to make this step fit, newest first: they are waiting again, at the head of the line."""

    preempted: tuple[int, ...] = ()
