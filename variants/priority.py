"""Priorities with aging: admission by effective priority (priority + steps waited // A), ties by
arrival, the head of that order blocking everyone behind it (`stallfree.spec.variants.priority`).

Waiting requests sit in one first-in first-out queue per priority level. Within a level the earlier
arrival always has the higher or equal effective priority (all age at one rate), so the head of the
whole order is the best of the level heads: each admission costs O(P), not a sort of the queue.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from stallfree.spec.variants.priority import DEFAULT_AGING, MAX_PRIORITY, check_priority, effective

from .batched import Batched, BatchedSequence
from .stepwise import Stepwise, StepwiseSequence


class Prioritized(Stepwise):
    """Decodes, then the partial prompt, then admissions by effective priority."""

    aging: int | None = DEFAULT_AGING  # A: steps per level gained while waiting; None: no aging

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        # One queue per level of (arrival step, arrival number, seq), in arrival order.
        self.levels: list[deque[tuple[int, int, StepwiseSequence]]] = [deque() for _ in range(MAX_PRIORITY + 1)]
        self.num_arrivals = 0

    def add(self, rid: int, prompt_len: int, max_new: int, priority: int = 0) -> None:  # type: ignore[override]
        request = self.validate(rid, prompt_len, max_new)
        check_priority(priority)
        seq = StepwiseSequence(request)
        self.seqs[rid] = seq
        self.levels[priority].append((self.num_steps, self.num_arrivals, seq))
        self.num_arrivals += 1

    def head(self) -> int | None:
        """The level whose first request heads the effective order, or None when nothing waits."""
        return best_level(self.levels, self.num_steps, self.aging)

    def is_waiting(self, seq: StepwiseSequence) -> bool:
        return any(entry[2] is seq for queue in self.levels for entry in queue)

    def leave_line(self, seq: StepwiseSequence) -> None:
        """A cancelled waiting request leaves its level; the order of every other request is kept."""
        leave_level(self.levels, seq)

    def admit(self, plan: list[tuple[int, int]], left: int) -> int:
        while left:
            level = self.head()
            if level is None or not self.fits(self.levels[level][0][2]):
                break  # the head blocks everyone behind it, of any priority
            left = self.admit_from(level, plan, left)
        return left

    def admit_from(self, level: int, plan: list[tuple[int, int]], left: int) -> int:
        """Admit the first request of `level`: its slot, its reservation, its first chunk."""
        seq = self.levels[level].popleft()[2]
        self.running[seq.rid] = seq
        self.free_kv -= seq.request.reservation
        n = min(seq.request.prompt_len, left)
        plan.append((seq.rid, n))
        return left - n


class BatchedPrioritized(Batched):
    """The same policy in the reference's incremental form (`batched`): the one the simulator runs."""

    aging: int | None = DEFAULT_AGING

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.levels: list[deque[tuple[int, int, BatchedSequence]]] = [deque() for _ in range(MAX_PRIORITY + 1)]
        self.num_arrivals = 0
        self.head_level: int | None = None  # the level head() found

    def add(self, rid: int, prompt_len: int, max_new: int, priority: int = 0) -> None:  # type: ignore[override]
        check_priority(priority)  # before the request is recorded: a refusal leaves no trace
        seq = self.accept(rid, prompt_len, max_new)
        self.levels[priority].append((self.num_steps, self.num_arrivals, seq))
        self.num_arrivals += 1

    def head(self) -> BatchedSequence | None:
        self.head_level = best_level(self.levels, self.num_steps, self.aging)
        return None if self.head_level is None else self.levels[self.head_level][0][2]

    def pop_head(self) -> None:
        assert self.head_level is not None
        self.levels[self.head_level].popleft()

    def leave_line(self, seq: BatchedSequence) -> None:
        leave_level(self.levels, seq)


def leave_level(levels: list[deque[tuple[int, int, Any]]], seq: object) -> None:
    """Take `seq` out of the level that holds it (its entry: arrival step, arrival number, seq)."""
    for queue in levels:
        for entry in queue:
            if entry[2] is seq:
                queue.remove(entry)
                return
    raise KeyError(f"rid {getattr(seq, 'rid', seq)!r} is in no level")


def best_level(levels: list[deque[tuple[int, int, Any]]], step: int, aging: int | None) -> int | None:
    """The level whose first request heads the effective order, or None when nothing waits."""
    best, best_key = None, None
    for level, queue in enumerate(levels):
        if queue:
            arrival, number, _ = queue[0]
            key = (-effective(level, arrival, step, aging), number)
            if best_key is None or key < best_key:
                best, best_key = level, key
    return best


class Aging4(BatchedPrioritized):
    """Aging one level every 4 steps: short enough to see in a trace of a few dozen steps."""

    aging = 4
