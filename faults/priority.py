"""Wrong schedulers for the priority contracts (`stallfree.spec.variants.priority`), one per rule they widen or add."""

from __future__ import annotations

from stallfree.variants.priority import Prioritized
from stallfree.variants.stepwise import StepwiseSequence


class NoAging(Prioritized):
    """Strict priority: a waiting request never gains a level, so a stream of higher-priority arrivals
    keeps a low-priority request waiting for as long as the stream lasts."""

    breaks = "AGING-BOUND"
    aging = None


class UncheckedPriority(Prioritized):
    """add() takes any priority in range of its queues without checking it: a negative one is queued
    (Python reads it from the end of the list of levels) instead of refused."""

    breaks = "NEVER-FIT"

    def add(self, rid: int, prompt_len: int, max_new: int, priority: int = 0) -> None:  # type: ignore[override]
        request = self.validate(rid, prompt_len, max_new)
        if type(priority) is not int or not -len(self.levels) <= priority < len(self.levels):
            raise ValueError(f"priority {priority!r} has no queue")
        seq = StepwiseSequence(request)
        self.seqs[rid] = seq
        self.levels[priority].append((self.num_steps, self.num_arrivals, seq))
        self.num_arrivals += 1


class OnePriorityAdmission(Prioritized):
    """Admits at most one request a step, leaving budget unused while the next one fits."""

    breaks = "PRIORITY-WORK-CONSERVING"

    def admit(self, plan: list[tuple[int, int]], left: int) -> int:
        level = self.head()
        if left and level is not None and self.fits(self.levels[level][0][2]):
            return self.admit_from(level, plan, left)
        return left


class IgnorePriority(Prioritized):
    """Admits in arrival order whatever the priorities: first come first served."""

    breaks = "PRIORITY-ORDER"

    def head(self) -> int | None:
        heads = [(queue[0][1], level) for level, queue in enumerate(self.levels) if queue]
        return min(heads)[1] if heads else None


PRIORITY_FAULTS: dict[str, type[Prioritized]] = {
    cls.breaks: cls for cls in (NoAging, UncheckedPriority, OnePriorityAdmission, IgnorePriority)
}
