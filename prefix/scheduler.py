"""The prefix-caching scheduler: the paged design, with full blocks kept and shared by their tokens.

Everything the paged scheduler decides it still decides (decodes first, the partial prefill, FCFS
admission under the watermark, newest-first recompute preemption). What it adds:

- HIT (CACHED-NOT-PREFILLED, HIT-SAME-TOKENS): the waiting head is admitted holding the longest run of
  its leading blocks already cached (held by running requests, or free and not yet evicted), at most
  up to its last prefill token, which is always computed so that its chunk emits the token.
- CACHED-NOT-CHARGED: its first chunk is min(prefill after the hit, budget left): the cached tokens
  cost no budget. WATERMARK counts the free cached blocks a hit takes back from the free pool.
- SHARED-READONLY: a hit is whole blocks, and every chunk computes into blocks its request alone holds.
- FREE-AT-ZERO: a block shared by several requests returns to the pool only when the last of them
  lets it go; a full block then stays cached while free (a request's own blocks only while it waits
  to be recomputed: those past its hit become empty when it is admitted again, those left when it ends).
- EVICT-LRU: a new block is an empty one if any is left, else the least recently freed cached one.
  A request lets its blocks go last block first, so a prefix outlives the blocks that extend it.

State beyond the paged scheduler's: `_refs` (cached block key -> running requests holding it), `_lru`
(free cached blocks, least recently freed first; part of the free blocks), per request the keys of its
content blocks (`_keys`) and the key it holds for each (`_shared`; None where it computed a block whose
key another block already had, a private copy). Keys are `contract.keys`'.
"""

from __future__ import annotations

from collections import OrderedDict

from stallfree.paged import Scheduler as Paged
from stallfree.paged import blocks_for
from stallfree.paged.progress import Phase
from stallfree.paged.scheduler import PagedSequence
from stallfree.spec.types import Entry

from .contract.keys import BlockKey, check_content, content_keys, own_key
from .plan import PrefixPlan


class Scheduler(Paged):
    """The paged scheduler with automatic prefix caching; add() takes an optional `content`."""

    design = "prefix"  # judged by the prefix monitor against the prefix rules (stallfree.spec.registry)

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int, block_size: int = 16,
                 watermark: int | None = None) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, block_size, watermark)
        self._refs: dict[BlockKey, int] = {}
        self._lru: OrderedDict[BlockKey, None] = OrderedDict()
        self._keys: dict[int, list[int]] = {}  # rid -> keys of its content blocks
        self._shared: dict[int, list[BlockKey | None]] = {}  # rid -> key held for each leading content block
        self._cached: list[tuple[int, int]] = []  # this plan's (rid, cached tokens)
        self.num_hit_tokens = 0  # prefill tokens taken from the cache, in all
        self.num_hits = 0  # admissions that took at least one block from the cache
        self.num_evictions = 0

    def add(self, rid: int, prompt_len: int, max_new: int, content: object = ()) -> None:
        """The paged add(), with the request's `content` (`contract.keys`; none: every token its own)."""
        segments = check_content(content, prompt_len) if content else ()
        super().add(rid, prompt_len, max_new)
        self._keys[rid] = content_keys(segments, self.block_size) if segments else []
        self._shared[rid] = []

    # -- the decisions ---------------------------------------------------------------------------

    def match(self, seq: PagedSequence) -> tuple[int, int]:
        """HIT-SAME-TOKENS: (blocks, of which free) of the longest run of `seq`'s leading blocks that are
        cached, within its prefill less its last token."""
        keys = self._keys[seq.rid]
        num = revived = 0
        for j in range((seq.target - 1) // self.block_size):
            key = keys[j] if j < len(keys) else own_key(seq.rid, j)
            if key in self._lru:
                revived += 1
            elif key not in self._refs:
                break
            num += 1
        return num, revived

    def first_chunk(self, seq: PagedSequence, cached: int, left: int) -> int:
        """CACHED-NOT-CHARGED: the first chunk after `cached` tokens from the cache, in `left` budget."""
        return min(seq.target - cached, left)

    def hit_admits(self, num: int, revived: int, n: int) -> bool:
        """WATERMARK: taking `revived` free cached blocks back and the chunk's new blocks leaves the watermark."""
        new = blocks_for(num * self.block_size + n, self.block_size) - num
        return self._free_blocks - revived - new >= self.watermark

    def admit_waiting(self, step: int, left: int, entries: list[Entry]) -> None:
        self._cached = []
        while left and self._waiting and len(self._running) < self.config.max_seqs:
            seq = self._waiting[0]
            self.evict()  # the blocks this step took so far come out of the cache first
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
            left -= n

    def hold(self, seq: PagedSequence, num: int) -> None:
        """SHARED-READONLY: `seq` holds its first `num` blocks from the cache, read-only; its prefill
        starts after them."""
        keys, shared = self._keys[seq.rid], self._shared[seq.rid]
        self.drop_own(seq, max(num, len(keys)))  # the rest of its own cached blocks it computes again
        if not num:
            return
        for j in range(num):
            key = keys[j] if j < len(keys) else own_key(seq.rid, j)
            if key in self._lru:
                del self._lru[key]
                self._free_blocks -= 1
                if j >= len(keys):
                    continue  # its own block, back from the cache
                self._refs[key] = 1
            elif j < len(keys):
                self._refs[key] += 1
            shared.append(key)
        seq.num_blocks = num
        seq.stored_computed = num * self.block_size
        self._cached.append((seq.rid, seq.stored_computed))
        self.num_hit_tokens += seq.stored_computed
        self.num_hits += 1

    def evict(self) -> None:
        """EVICT-LRU: blocks taken beyond the empty ones come out of the cache, least recently freed first."""
        while len(self._lru) > self._free_blocks:
            self._lru.popitem(last=False)
            self.num_evictions += 1

    def plan_of(self, step: int, entries: list[Entry], preempted: list[int]) -> PrefixPlan:
        if preempted:
            self._cached = []
        self.evict()
        return PrefixPlan(step, tuple(entries), tuple(preempted), tuple(self._cached))

    def prefilled(self, chunks: tuple[Entry, ...]) -> None:
        """The content blocks the step's chunks filled are cached from now on, in plan order (a block
        whose key is already cached stays a private copy)."""
        bs = self.block_size
        for rid, _ in chunks:
            keys, shared = self._keys[rid], self._shared[rid]
            full = min(self._sequences[rid].stored_computed // bs, len(keys))
            while len(shared) < full:
                key = keys[len(shared)]
                if key in self._refs or key in self._lru:
                    shared.append(None)
                else:
                    self._refs[key] = 1
                    shared.append(key)

    # -- letting blocks go -----------------------------------------------------------------------

    def _remove_running(self, seq: PagedSequence) -> None:
        """FREE-AT-ZERO: the paged release, less the blocks other running requests still hold."""
        held = seq.num_blocks
        super()._remove_running(seq)  # settles the counts and gives every held block back
        self._free_blocks -= self.release(seq, held)

    def release(self, seq: PagedSequence, held: int) -> int:
        """`seq` lets its `held` blocks go, last first: full ones join the back of the cache (its own
        ones too: its recompute may take them back). Returns how many stay held by other requests."""
        bs = self.block_size
        shared = self._shared[seq.rid]
        still = 0
        for j in reversed(range(min(seq.stored_computed // bs, held))):
            if j >= len(shared):
                self._lru[own_key(seq.rid, j)] = None
                continue
            key = shared[j]
            if key is None:
                continue  # a private copy: an empty block now
            self._refs[key] -= 1
            if self._refs[key]:
                still += 1
            else:
                del self._refs[key]
                self._lru[key] = None
        shared.clear()
        return still

    def end(self, seq: PagedSequence, phase: Phase) -> None:
        """The paged end; the request's own cached blocks become empty (no one else can hit them)."""
        super().end(seq, phase)
        self.drop_own(seq, 0)
        del self._keys[seq.rid], self._shared[seq.rid]

    def drop_own(self, seq: PagedSequence, first: int) -> None:
        """`seq`'s own cached blocks from index `first` on become empty: no other request can hit them,
        and it computes them again (a second copy under the same key would be stale)."""
        for j in range(first, blocks_for(seq.request.prompt_len + seq.request.max_new, self.block_size)):
            self._lru.pop(own_key(seq.rid, j), None)

    # -- read-only views -------------------------------------------------------------------------

    @property
    def cached(self) -> tuple[BlockKey, ...]:
        """The keys of the free cached blocks, least recently freed (the next evicted) first."""
        return tuple(self._lru)


def small_blocks(token_budget: int, max_seqs: int, kv_tokens: int) -> Scheduler:
    """The prefix-caching scheduler with 2-token blocks and no watermark, for small pools."""
    return Scheduler(token_budget, max_seqs, kv_tokens, block_size=2, watermark=0)


small_blocks.design = "prefix"  # type: ignore[attr-defined]
