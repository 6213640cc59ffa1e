"""Deliberately wrong schedulers for stops and cancels: each breaks the rule in `breaks` by
overriding one step of `Stepwise`'s stop or cancel handling. The negative controls of the widened
rules (TOKENS, KV, FCFS, PROGRESS) and of CANCEL. Each is a mixin as well: put before a variant on
`Stepwise` (`variant_lifecycle`), it breaks the same rule there."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from stallfree.variants.stepwise import Stepwise, StepwiseSequence


class _Ghosts(Stepwise):
    """Requests that ended (their reservation back, out of the running set) but whose decode stays
    in the batch: each plan still gives every ghost a token's slot."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int, **variant: Any) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, **variant)  # a variant's own fields (block_size)
        self.ghosts: set[int] = set()

    def haunt(self, seq: StepwiseSequence) -> None:
        if seq.rid in self.running:
            self.release(seq)
            self.ghosts.add(seq.rid)

    def plan_decodes(self, plan: list[tuple[int, int]], left: int) -> int:
        left = super().plan_decodes(plan, left)
        for rid in sorted(self.ghosts)[:left]:
            plan.append((rid, 1))
            left -= 1
        return left

    def complete(self, plan: list[tuple[int, int]], stopped: object = ()) -> list[int]:  # type: ignore[override]
        return super().complete([e for e in plan if e[0] not in self.ghosts], stopped)  # type: ignore[arg-type]


class PlansCancelled(_Ghosts):
    """A cancelled running request leaves the running set and returns its reservation, but its
    decode stays in the batch."""

    breaks = "CANCEL"

    def on_cancel(self, seq: StepwiseSequence) -> None:
        self.haunt(seq)


class CancelAnything(Stepwise):
    """cancel() of a rid that is not waiting or running returns quietly instead of raising."""

    breaks = "CANCEL"

    def cancel(self, rid: int) -> None:
        seq = self.seqs.get(rid) if type(rid) is int else None
        if seq is not None and (self.is_waiting(seq) or rid in self.running) and seq not in self.cancelling:
            super().cancel(rid)


class DecodesAfterStop(_Ghosts):
    """A stop returns the request's reservation, but its decode stays in the batch."""

    breaks = "TOKENS"

    def on_stop(self, seq: StepwiseSequence) -> None:
        self.haunt(seq)


class StopsAnyRid(Stepwise):
    """complete() takes a stop for any running request, whether it emitted a token or not."""

    breaks = "TOKENS"

    def check_stopped(self, plan: list[tuple[int, int]], stopped: Iterable[int]) -> tuple[int, ...]:
        return tuple(stopped)

    def on_stop(self, seq: StepwiseSequence) -> None:
        if seq.rid in self.running:
            self.release(seq)


class LateStopRelease(Stepwise):
    """A stopped request's KV comes back one step late, on the next complete()."""

    breaks = "KV"

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int, **variant: Any) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, **variant)  # a variant's own fields (block_size)
        self.owed: list[int] = []

    def on_stop(self, seq: StepwiseSequence) -> None:
        if seq.rid in self.running:
            del self.running[seq.rid]
            self.owed.append(seq.request.reservation)

    def complete(self, plan: list[tuple[int, int]], stopped: object = ()) -> list[int]:  # type: ignore[override]
        owed, self.owed = self.owed, []
        emitted = super().complete(plan, stopped)  # type: ignore[arg-type]
        self.free_kv += sum(owed)
        return emitted


class CancelKeepsKV(Stepwise):
    """A cancelled running request leaves the batch, but its reservation is never returned."""

    breaks = "KV"

    def on_cancel(self, seq: StepwiseSequence) -> None:
        del self.running[seq.rid]


class SwapRemoveCancel(Stepwise):
    """A cancelled waiting request's place in line goes to the last one waiting (an O(1) removal)."""

    breaks = "FCFS"

    def leave_line(self, seq: StepwiseSequence) -> None:
        line = list(self.waiting)
        i = line.index(seq)
        last = line.pop()
        if last is not seq:
            line[i] = last
        self.waiting = deque(line)


class CancelTombstone(Stepwise):
    """A cancelled waiting request stays in line as a tombstone that admission stops at."""

    breaks = "PROGRESS"

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int, **variant: Any) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, **variant)  # a variant's own fields (block_size)
        self.tombstones: set[int] = set()

    def leave_line(self, seq: StepwiseSequence) -> None:
        self.tombstones.add(seq.rid)

    def next_admission(self) -> StepwiseSequence | None:
        if self.waiting[0].rid in self.tombstones:
            return None
        return super().next_admission()


LIFECYCLE_FAULTS: tuple[type[Stepwise], ...] = (
    PlansCancelled, CancelAnything, DecodesAfterStop, StopsAnyRid, LateStopRelease, CancelKeepsKV,
    SwapRemoveCancel, CancelTombstone,
)
