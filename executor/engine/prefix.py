"""The step path of the prefix-caching design (`stallfree.prefix`): the paged step path, with full
blocks kept by their tokens and shared between requests on the real model.

Each request's prompt tokens are its `content` (one segment per token id, `prefix.contract.keys`),
so the scheduler, the monitor and this executor key a block by the same tokens. The executor keeps
its own cache of physical blocks and follows the plan, never the scheduler's state:

- an admission the plan's `cached` names with N tokens starts its block table with the physical
  blocks holding its first N / block_size blocks (looked up by their keys; a claim on a block not
  cached here breaks HIT-SAME-TOKENS) and prefills only from position N;
- a block is held by reference count; a claim that is not whole blocks would write into a cached
  block (SHARED-READONLY), and a shared block's cells are already written, so the write ledger
  refuses any write into them (as a cell written twice);
- a block whose count reaches zero is free (FREE-AT-ZERO): a full content block stays cached and
  valid, unpoisoned, until a new block is needed and none is empty (then the least recently freed
  is evicted, EVICT-LRU); a preempted request's own full blocks stay cached for its recompute;
  partly filled blocks and private copies become empty and are poisoned.

After every step the free blocks (empty plus free cached), the free cached blocks' keys in eviction
order, and each shared block's holders must equal the contract's cache (BLOCKS, EVICT-LRU,
FREE-AT-ZERO); the free cached keys also the scheduler's `cached` view, where it shows one.
Whether a hit leaves a request's tokens and logits as they are is judged against a run without the
cache (`cachehits.py`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, cast

from stallfree.prefix.contract.keys import BlockKey, content_keys, own_key
from stallfree.spec.paged.shadow import blocks_for

from .checks import RealPathViolation
from .executor import Built
from .paged import PagedExecutor
from .stream import Stream, prompt_tokens

HIT_RULE = "HIT-SAME-TOKENS"


class PrefixExecutor(PagedExecutor):
    """Drives a prefix monitor (`stallfree.prefix.contract.monitor.PrefixMonitor`) and its scheduler."""

    own_rules = (HIT_RULE, "SHARED-READONLY", "EVICT-LRU", "FREE-AT-ZERO")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.keys: dict[int, list[int]] = {}  # rid -> keys of its content blocks
        self.refs: dict[int, int] = {}  # held block -> holders
        self.block_of: dict[BlockKey, int] = {}  # cached key -> the block holding it
        self.key_of: dict[int, BlockKey] = {}
        self.lru: OrderedDict[int, None] = OrderedDict()  # free cached blocks, least recently freed first
        self.registered: dict[int, int] = {}  # rid -> leading content blocks registered (or private copies)
        self.parked: dict[int, Stream] = {}  # preempted, waiting to be recomputed
        self.claims: dict[int, int] = {}  # this plan's rid -> cached tokens
        self.num_evictions = 0

    @property
    def free_memory(self) -> int:
        return self.blocks.num_free + len(self.lru)

    def content(self, rid: int, prompt_len: int) -> tuple[tuple[int, int], ...]:
        """The request's prompt as content: token id t is the segment (t, 1)."""
        prompt = self.prompts.get(rid) or prompt_tokens(self.seed, rid, prompt_len, self.model.cfg.vocab)
        return tuple((t, 1) for t in prompt) if len(prompt) == prompt_len else ()

    def add(self, rid: Any, prompt_len: Any, max_new: Any) -> bool:
        sound = type(rid) is int and type(prompt_len) is int and prompt_len > 0
        content = self.content(rid, prompt_len) if sound else ()
        accepted = bool(cast(Any, self.monitor).add(rid, prompt_len, max_new, content))  # the prefix monitor's add
        if accepted:
            self.requests[rid] = (prompt_len, max_new)
            self.added_at[rid] = time.perf_counter()
            self.keys[rid] = content_keys(content, self.block_size)
        return accepted

    # -- the plan's hits --------------------------------------------------------------------------

    def take_back(self, step: int, plan: object) -> None:
        """Preempted requests let their blocks go (their own full ones stay cached) and wait; then
        the plan's cache claims are read."""
        for rid in getattr(plan, "preempted", ()):
            stream = self.streams.pop(rid, None)
            if stream is None:
                raise RealPathViolation("PREEMPT-ORDER", step, f"the plan preempts rid {rid}, which is not running")
            self.let_go(stream, "was preempted", step, keep_own=True)
            stream.forget()
            self.parked[rid] = stream
        planned = {rid for rid, _ in cast(Any, plan)}
        self.claims = {}
        for pair in getattr(plan, "cached", ()):
            rid, n = pair
            if rid not in planned or rid in self.streams or type(n) is not int or n < 0:
                raise RealPathViolation(HIT_RULE, step, f"the plan says rid {rid!r} holds {n!r} cached tokens; "
                                        "it is not an admission of this step")
            self.claims[rid] = n

    def admit(self, step: int, rid: int) -> Stream:
        stream = self.parked.pop(rid, None)
        if stream is None:
            stream = super().admit(step, rid)
        else:
            self.streams[rid] = stream
            self.tables[rid] = []
            self.ledger.reserve(rid, [])
        self.hit(step, stream, self.claims.pop(rid, 0))
        return stream

    def hit(self, step: int, stream: Stream, n: int) -> None:
        """The admitted `stream` holds the blocks of its first `n` positions from the cache."""
        bs, rid, keys = self.block_size, stream.rid, self.keys[stream.rid]
        if n % bs:
            raise RealPathViolation("SHARED-READONLY", step, f"the plan says rid {rid} holds {n} cached tokens: its "
                                    f"chunk would write into block {n // bs}, held from the cache (blocks of {bs})")
        if n >= stream.target:
            raise RealPathViolation(HIT_RULE, step, f"the plan says rid {rid} holds {n} cached tokens: its last "
                                    f"prefill token ({stream.target - 1}) must be computed, to emit its token")
        num = n // bs
        self.drop_own(stream, max(num, len(keys)))  # computed again: a second copy would be stale
        table, cells = self.tables[rid], []
        for j in range(num):
            key = keys[j] if j < len(keys) else own_key(rid, j)
            block = self.block_of.get(key)
            if block is None:
                raise RealPathViolation(HIT_RULE, step, f"the plan says rid {rid} holds {n} cached tokens; its "
                                        f"block {j} (positions {j * bs}-{j * bs + bs - 1}) is not cached here")
            self.lru.pop(block, None)
            if j >= len(keys):  # its own block, back from the cache: held by it alone, keyed again when let go
                del self.block_of[key], self.key_of[block]
            self.refs[block] = self.refs.get(block, 0) + 1
            table.append(block)
            cells.extend(self.blocks.cells(block))
        stream.cells = cells
        stream.num_prefilled = n
        self.ledger.extend(rid, cells)
        self.ledger.num_written[rid] = n
        self.registered[rid] = min(num, len(keys))
        stream.num_cached += n

    def run(self, step: int, built: Built) -> dict[int, int]:
        """The forward, then the content blocks the step's chunks filled are cached, in plan order."""
        sampled = super().run(step, built)
        for rid in dict.fromkeys(built.rid_of_row):
            self.register(self.streams[rid])
        return sampled

    def register(self, stream: Stream) -> None:
        keys, table = self.keys[stream.rid], self.tables[stream.rid]
        full = min(stream.num_prefilled // self.block_size, len(keys))
        for j in range(self.registered[stream.rid], full):
            if keys[j] not in self.block_of:  # else a private copy: another block has these tokens
                self.block_of[keys[j]] = table[j]
                self.key_of[table[j]] = keys[j]
        self.registered[stream.rid] = max(full, self.registered[stream.rid])

    # -- blocks -----------------------------------------------------------------------------------

    def new_block(self) -> int:
        """An empty block if any is left, else the least recently freed cached one, evicted."""
        if self.blocks.num_free or not self.lru:
            block = self.blocks.take()
        else:
            block = self.lru.popitem(last=False)[0]
            del self.block_of[self.key_of.pop(block)]
            self.ledger.written.difference_update(self.blocks.cells(block))
            self.to_poison.extend(self.blocks.cells(block))
            self.num_evictions += 1
        self.refs[block] = 1
        return block

    def let_go(self, stream: Stream, why: str, step: int, keep_own: bool) -> None:
        """`stream` lets its blocks go, last first (FREE-AT-ZERO): held by others they stay held; a
        keyed one is cached while free, as is (with `keep_own`) a full block of its own tokens; the
        rest become empty. Free cells are marked freed in the ledger; empty ones are poisoned."""
        rid, bs = stream.rid, self.block_size
        table = self.tables.pop(rid, [])
        full = self.ledger.num_written.get(rid, 0) // bs
        emptied: list[int] = []
        freed: list[int] = []
        for j in reversed(range(len(table))):
            block = table[j]
            self.refs[block] -= 1
            if self.refs[block]:
                continue
            del self.refs[block]
            freed.extend(self.blocks.cells(block))
            if block not in self.key_of and keep_own and j < full and j >= len(self.keys[rid]):
                self.block_of[own_key(rid, j)] = block
                self.key_of[block] = own_key(rid, j)
            if block in self.key_of:
                self.lru[block] = None
            else:
                emptied.append(block)
                self.blocks.release([block])
        ledger = self.ledger
        ledger.reserved.pop(rid, None)
        ledger.num_written.pop(rid, None)
        for cell in freed:
            ledger.freed[cell] = (rid, why, step)
        empty_cells = [c for b in emptied for c in self.blocks.cells(b)]
        ledger.written.difference_update(empty_cells)
        self.to_poison.extend(empty_cells)

    def drop_own(self, stream: Stream, first: int) -> None:
        """`stream`'s own cached blocks from index `first` on become empty (no one else can hit them)."""
        peak = blocks_for(stream.prompt_len + stream.max_new, self.block_size)
        for j in range(first, peak + 1):
            block = self.block_of.pop(own_key(stream.rid, j), None)
            if block is None:
                continue
            del self.key_of[block], self.lru[block]
            self.blocks.release([block])
            cells = self.blocks.cells(block)
            self.ledger.written.difference_update(cells)
            self.to_poison.extend(cells)

    def give_back(self, stream: Stream, why: str, step: int) -> None:
        """An ended request: its blocks let go, its own cached ones emptied."""
        self.let_go(stream, why, step, keep_own=False)
        self.drop_own(stream, 0)

    def cancel(self, rid: int) -> bool:
        """A preempted request waiting to be recomputed ends as a running one does (with no blocks)."""
        parked = self.parked.pop(rid, None)
        if parked is not None:
            self.streams[rid], self.tables[rid] = parked, []
            self.ledger.reserve(rid, [])
        accepted = super().cancel(rid)
        if parked is not None and not accepted:
            self.parked[rid] = self.streams.pop(rid)
            self.tables.pop(rid)
        return accepted

    # -- the accounting ---------------------------------------------------------------------------

    def check_memory(self, step: int) -> None:
        """BLOCKS as in the paged design, and the contract's cache: the free cached blocks' keys in
        eviction order (EVICT-LRU) and each held keyed block's holders (FREE-AT-ZERO)."""
        super().check_memory(step)
        cache = cast(Any, self.monitor.shadow).cache  # the prefix shadow's
        mine = [self.key_of[b] for b in self.lru]
        shown = getattr(self.monitor.scheduler, "cached", None)
        for whose, theirs in (("contract", list(cache.lru)), ("scheduler", shown)):
            if isinstance(theirs, tuple | list) and mine != list(theirs):
                raise RealPathViolation("EVICT-LRU", step, f"the executor's free cached blocks ({len(mine)}) are "
                                        f"not the {whose}'s ({len(theirs)}), in eviction order")
        for key, holders in cache.refs.items():
            block = self.block_of.get(key)
            held = self.refs.get(block, 0) if block is not None else 0
            if held != holders:
                raise RealPathViolation("FREE-AT-ZERO", step, f"a cached block is held {held} time(s) here; the "
                                        f"contract counts {holders} holder(s)")
