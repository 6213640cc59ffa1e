"""The stop and cancel faults on the variants: each breaks its rule (`breaks`) on a variant, so that
every lifecycle rule a variant claims (CANCEL, TOKENS' stop clause, KV's return, the waiting line's
order after a cancel, PROGRESS) has a negative control on that variant.

On the `Stepwise` renderings the faults of `lifecycle` are mixins: put before the variant, each
overrides the one step it breaks (`on(variant, fault)`). The priority variant keeps its line in
levels, so the two faults about the line are its own (`LevelSwapRemove`, `LevelTombstone`; and
`BatchedLevelSwapRemove` in the batched rendering). The
batched renderings end requests in their own way (`Batched.end`, `leave_line`, `emits_in`): their
faults (`EndKeepsKV`, `StopAnyRunning`, `CancelQuietly`, `SwapLeaveLine`, `TombstoneLine`) override
those.

Each class is a module attribute named `<fault>On<variant>`, so the kit loads it as MODULE:FACTORY.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from stallfree.spec import InvalidField
from stallfree.variants.aligned import Aligned, BatchedAligned
from stallfree.variants.batched import Batched, BatchedResizable, BatchedSequence, Decode
from stallfree.variants.priority import BatchedPrioritized, Prioritized
from stallfree.variants.rotating import BatchedRotating, Resizable, Rotating
from stallfree.variants.static import StaticBatching
from stallfree.variants.stepwise import StepwiseSequence

from .lifecycle import (
    LIFECYCLE_FAULTS,
    CancelAnything,
    CancelKeepsKV,
    DecodesAfterStop,
    LateStopRelease,
    PlansCancelled,
    StopsAnyRid,
)


def on(variant: type, fault: type) -> type:
    """`fault` (a mixin of one wrong step) on `variant`: it breaks `fault.breaks` there."""
    name = f"{fault.__name__}On{variant.__name__}"
    doc = f"{variant.__name__}, with {fault.__name__}'s wrong step: {fault.__doc__}"
    return type(name, (fault, variant), {"__module__": __name__, "__qualname__": name, "__doc__": doc})


def swap_out(levels: list[Any], seq: object) -> None:
    """Take `seq` out of its level by moving the level's last request into its place (an O(1) removal
    that breaks the level's arrival order)."""
    for queue in levels:
        line = list(queue)
        i = next((i for i, entry in enumerate(line) if entry[2] is seq), None)
        if i is not None:
            last = line.pop()
            if last[2] is not seq:
                line[i] = last
            queue.clear()
            queue.extend(line)
            return


class LevelSwapRemove(Prioritized):
    """A cancelled waiting request's place in its level goes to the last one waiting there."""

    breaks = "PRIORITY-ORDER"

    def leave_line(self, seq: StepwiseSequence) -> None:
        swap_out(self.levels, seq)


class BatchedLevelSwapRemove(BatchedPrioritized):
    """The same, in the batched rendering."""

    breaks = "PRIORITY-ORDER"

    def leave_line(self, seq: BatchedSequence) -> None:
        swap_out(self.levels, seq)


class LevelTombstone(Prioritized):
    """A cancelled waiting request stays in its level as a tombstone that admission stops at."""

    breaks = "PROGRESS"

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.tombstones: set[int] = set()

    def leave_line(self, seq: StepwiseSequence) -> None:
        self.tombstones.add(seq.rid)

    def is_waiting(self, seq: StepwiseSequence) -> bool:
        return seq.rid not in self.tombstones and super().is_waiting(seq)

    def fits(self, seq: StepwiseSequence) -> bool:
        return seq.rid not in self.tombstones and super().fits(seq)


class EndKeepsKV(Batched):
    """A request that stops or is cancelled leaves the batch, but its reservation is never returned."""

    breaks = "KV"

    def end(self, seq: BatchedSequence) -> None:
        super().end(seq)
        self.free_kv -= seq.request.reservation


class StopAnyRunning(Batched):
    """complete() takes a stop for any running request, whether it emitted a token or not."""

    breaks = "TOKENS"

    def emits_in(self, plan: list[Decode]) -> Callable[[int], bool]:
        return lambda rid: rid in self.running


class CancelQuietly(Batched):
    """cancel() of a rid that is not waiting or running returns quietly instead of raising."""

    breaks = "CANCEL"

    def cancel(self, rid: int) -> None:
        with contextlib.suppress(InvalidField):
            super().cancel(rid)


class SwapLeaveLine(Batched):
    """A cancelled waiting request's place in line goes to the last one waiting (an O(1) removal)."""

    breaks = "FCFS"

    def leave_line(self, seq: BatchedSequence) -> None:
        line = self.waiting
        i = next(i for i, s in enumerate(line) if s is seq)
        last = line.pop()
        if last is not seq:
            line[i] = last


class TombstoneLine(Batched):
    """A cancelled waiting request stays in line (in its level, under priorities) as a tombstone that
    admission stops at."""

    breaks = "PROGRESS"

    def leave_line(self, seq: BatchedSequence) -> None:
        """It stays where it was; cancel() marks it ended."""

    def head(self) -> BatchedSequence | None:
        head = super().head()
        return None if head is not None and head.ended else head


# The lifecycle faults that do not touch the waiting line run on every Stepwise variant; the two that
# do (SwapRemoveCancel, CancelTombstone) on those whose line is `waiting`. Static batching has no
# batched rendering; the budget-change variants (Resizable, BatchedResizable) take the same faults as
# rotation, on their own decode order.
NOT_THE_LINE = (PlansCancelled, CancelAnything, DecodesAfterStop, StopsAnyRid, LateStopRelease, CancelKeepsKV)
BATCHED_FAULTS = (EndKeepsKV, StopAnyRunning, CancelQuietly, SwapLeaveLine, TombstoneLine)
VARIANT_LIFECYCLE_FAULTS: dict[str, tuple[type, ...]] = {
    "Aligned": tuple(on(Aligned, f) for f in LIFECYCLE_FAULTS),
    "Resizable": tuple(on(Resizable, f) for f in LIFECYCLE_FAULTS),
    "Rotating": tuple(on(Rotating, f) for f in LIFECYCLE_FAULTS),
    "Prioritized": (*(on(Prioritized, f) for f in NOT_THE_LINE), LevelSwapRemove, LevelTombstone),
    "BatchedAligned": tuple(on(BatchedAligned, f) for f in BATCHED_FAULTS),
    "BatchedResizable": tuple(on(BatchedResizable, f) for f in BATCHED_FAULTS),
    "BatchedRotating": tuple(on(BatchedRotating, f) for f in BATCHED_FAULTS),
    "BatchedPrioritized": (*(on(BatchedPrioritized, f) for f in BATCHED_FAULTS if f is not SwapLeaveLine),
                           BatchedLevelSwapRemove),
    "StaticBatching": tuple(on(StaticBatching, f) for f in LIFECYCLE_FAULTS),
}
globals().update({cls.__name__: cls for faults in VARIANT_LIFECYCLE_FAULTS.values() for cls in faults})
