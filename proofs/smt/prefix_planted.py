"""Planted bugs for the prefix design's Z3 theorems, each a copy of the prefix scheduler that errs in the
method its theorem is about and breaks that theorem alone:

- `FreeWhileHeld` (FREE-AT-ZERO, `prefix_cache`): its `release` frees a shared block while another
  running request still holds it. The registry's own FREE-AT-ZERO fault (`faults.FreeShared`) errs in
  `complete`, which that theorem is not about.
- `ChargeInLoop` (CACHED-NOT-CHARGED, `prefix_admit`): each first chunk is right, but its admission loop
  charges a hit's cached tokens to the budget the next admission gets (`first_chunk`'s theorem cannot see it).
- `WriteHeldQuietly` (SHARED-READONLY, `prefix_admit`): its chunk writes the last block of its hit while
  its plan reports the hit whole (`faults.WriteShared` reports the shorter hit, and so breaks the other
  admission theorems too).
- `SkipPrefilled` (CACHED-NOT-PREFILLED, `prefix_admit`): its complete() registers none of the blocks
  the chunks filled, so the next request prefills them again.
"""

from __future__ import annotations

from stallfree.paged.scheduler import PagedSequence
from stallfree.prefix.faults import PrefixFault
from stallfree.spec.types import Entry


class FreeWhileHeld(PrefixFault):
    """Lets a shared block join the free cached blocks as soon as one of its holders lets it go."""

    breaks = "FREE-AT-ZERO"

    def release(self, seq: PagedSequence, held: int) -> int:
        freed = [key for key in self._shared[seq.rid][:held] if key is not None]
        still = super().release(seq, held)
        for key in freed:
            self._lru[key] = None
        return still


class ChargeInLoop(PrefixFault):
    """The prefix admission loop, less a hit's cached tokens from the budget left after its chunk."""

    breaks = "CACHED-NOT-CHARGED"

    def admit_waiting(self, step: int, left: int, entries: list[Entry]) -> None:
        self._cached = []
        while left and self._waiting and len(self._running) < self.config.max_seqs:
            seq = self._waiting[0]
            self.evict()
            num, revived = self.match(seq)
            n = self.first_chunk(seq, num * self.block_size, left)
            if n < 1 or not self.hit_admits(num, revived, n):
                break
            self._waiting.popleft()
            self._running[seq.rid] = self._partial[seq.rid] = seq
            seq.admitted_at = step
            self.hold(seq, num)
            self.take(seq, n)
            entries.append(Entry(seq.rid, n))
            left = max(0, left - n - num * self.block_size)  # the bug: the cached tokens charged


class WriteHeldQuietly(PrefixFault):
    """Recomputes the last token of a hit into its cached block, its plan still reporting the hit whole."""

    breaks = "SHARED-READONLY"

    def hold(self, seq: PagedSequence, num: int) -> None:
        super().hold(seq, num)
        if num:
            seq.stored_computed -= 1


class SkipPrefilled(PrefixFault):
    """Caches none of the blocks the step's chunks filled."""

    breaks = "CACHED-NOT-PREFILLED"

    def prefilled(self, chunks: tuple[Entry, ...]) -> None:
        return None
