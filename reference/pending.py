"""The step in flight: the plan schedule() returned, and the running requests cancelled while it is."""

from __future__ import annotations

from dataclasses import dataclass

from stallfree.spec.types import Plan

from .sequence import Sequence


@dataclass(slots=True)
class Pending:
    """From schedule() until complete() takes `plan`. A running request cancelled meanwhile is in
    `cancelled` (by rid) and ends when the plan completes: cancels wait only while a plan is pending."""

    plan: Plan
    cancelled: dict[int, Sequence]
