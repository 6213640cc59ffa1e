"""Deliberately wrong prefix-caching schedulers: each breaks one rule of the prefix design, named in
`breaks`, by overriding one decision of `stallfree.prefix.Scheduler`. The negative controls of the
prefix monitor, the kit's `prefix` profile, the prefix state machine and the prefix model check.

They run on blocks of 2 tokens with a watermark of one block (where the pool has one), as the paged
faults do, so that small workloads share blocks, evict and preempt."""

from __future__ import annotations

from stallfree.paged import blocks_for
from stallfree.paged.scheduler import PagedSequence

from .contract.keys import BlockKey
from .plan import PrefixPlan
from .scheduler import Scheduler


class PrefixFault(Scheduler):
    """The prefix-caching scheduler on a small pool: 2-token blocks, a watermark of one block."""

    breaks = ""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, block_size=2, watermark=min(1, kv_tokens // 2))


def small(token_budget: int, max_seqs: int, kv_tokens: int) -> Scheduler:
    """The correct prefix-caching scheduler on the faults' pool: the control they are measured against."""
    return Scheduler(token_budget, max_seqs, kv_tokens, block_size=2, watermark=min(1, kv_tokens // 2))


small.design = "prefix"  # type: ignore[attr-defined]


class WriteShared(PrefixFault):
    """Recomputes the last token of a hit into its cached block: the chunk starts one position early."""

    breaks = "SHARED-READONLY"

    def hold(self, seq: PagedSequence, num: int) -> None:
        super().hold(seq, num)
        if num:
            seq.stored_computed -= 1
            self._cached[-1] = (seq.rid, seq.stored_computed)


class HitOneMore(PrefixFault):
    """A hit runs one block past the cached run: it holds a block computed for other tokens."""

    breaks = "HIT-SAME-TOKENS"

    def hold(self, seq: PagedSequence, num: int) -> None:
        super().hold(seq, num)
        if num and (num + 1) * self.block_size < seq.target and self._free_blocks > self.watermark:
            seq.num_blocks += 1
            seq.stored_computed += self.block_size
            self._free_blocks -= 1
            self._cached[-1] = (seq.rid, seq.stored_computed)


class HitOneShort(PrefixFault):
    """Holds one cached block fewer than the cache has: a cached block is prefilled again."""

    breaks = "CACHED-NOT-PREFILLED"

    def match(self, seq: PagedSequence) -> tuple[int, int]:
        num, _ = super().match(seq)
        num = max(num - 1, 0)
        keys = self._keys[seq.rid]
        return num, sum(1 for key in keys[:num] if key in self._lru)


class ChargeCached(PrefixFault):
    """Charges a hit's cached tokens to the budget left for its first chunk (never below one token, so
    that it is still admitted: refusing it instead is caught as WORK-CONSERVING)."""

    breaks = "CACHED-NOT-CHARGED"

    def first_chunk(self, seq: PagedSequence, cached: int, left: int) -> int:
        return min(seq.target - cached, max(1, left - cached))


class FreeShared(PrefixFault):
    """A shared block a request lets go joins the free cached blocks at the end of the step, though
    another running request still holds it."""

    breaks = "FREE-AT-ZERO"

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self._let_go: list[BlockKey] = []

    def release(self, seq: PagedSequence, held: int) -> int:
        self._let_go += [key for key in self._shared[seq.rid] if key is not None]
        return super().release(seq, held)

    def complete(self, plan: PrefixPlan, stopped: object = ()) -> tuple[int, ...]:  # type: ignore[override]
        emitted = super().complete(plan, stopped)
        for key in self._let_go:
            if key in self._refs and key not in self._lru:
                self._lru[key] = None
        self._let_go = []
        return emitted


class EvictNewest(PrefixFault):
    """Evicts the most recently freed cached block instead of the least recently freed one. Not one of
    `PREFIX_FAULTS`: where its eviction takes a block an admission of the same step would hit, the first
    rule broken is CACHED-NOT-PREFILLED (the admission prefills what the contract still has cached)."""

    breaks = "EVICT-LRU"

    def evict(self) -> None:
        while len(self._lru) > self._free_blocks:
            self._lru.popitem(last=True)
            self.num_evictions += 1


class FreeFirstBlockFirst(PrefixFault):
    """Lets a request's blocks go first block first, so a prefix is evicted before the blocks that extend it."""

    breaks = "EVICT-LRU"

    def release(self, seq: PagedSequence, held: int) -> int:
        before = set(self._lru)
        still = super().release(seq, held)
        freed = [key for key in self._lru if key not in before]
        for key in reversed(freed):
            self._lru.move_to_end(key)
        return still


class IgnoreWatermark(PrefixFault):
    """Admits the head whenever its hit and first chunk fit the free blocks, the watermark forgotten."""

    breaks = "WATERMARK"

    def hit_admits(self, num: int, revived: int, n: int) -> bool:
        new = blocks_for(num * self.block_size + n, self.block_size) - num
        return self._free_blocks - revived - new >= 0


class CountRevivedTwice(PrefixFault):
    """While others run, counts the free cached blocks a hit takes back twice against the watermark, so a
    head that fits waits with budget left. (With nothing running, the same mistake leaves the plan
    empty, which PROGRESS reports first; this fault makes it only where WORK-CONSERVING judges it.)"""

    breaks = "WORK-CONSERVING"

    def hit_admits(self, num: int, revived: int, n: int) -> bool:
        times = 2 if self._running else 1
        new = blocks_for(num * self.block_size + n, self.block_size) - num
        return self._free_blocks - times * revived - new >= self.watermark


PREFIX_FAULTS: tuple[type[PrefixFault], ...] = (
    WriteShared, HitOneMore, HitOneShort, ChargeCached, FreeShared, FreeFirstBlockFirst, IgnoreWatermark,
    CountRevivedTwice,
)
