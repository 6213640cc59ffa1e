"""The prefix monitor's shadow: the paged shadow, with the block cache the contract expects
(`cache.Cache`) and, per request, the keys of its blocks. The sibling of `spec.paged.shadow`.

A running request holds ceil(tokens in KV / block_size) blocks as in the paged design; its leading
content blocks may be shared with other requests, so the free blocks are the cache's empty plus free
cached blocks, not the pool less what each request holds.

Each step's memory is worked out in plan order (`allocate`): the decodes' new blocks, the partial
chunks', then each admission's hit (the longest run of its leading blocks cached, up to its last
prefill token) and its chunk's new blocks. The rules judge a preview of it on a copy of the cache;
`apply` does it to the shadow's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from stallfree.spec.ending import Reason
from stallfree.spec.lines import start_running
from stallfree.spec.paged.shadow import PagedFacts, PagedShadow, PagedTrack, blocks_for, count_emitted, end_all
from stallfree.spec.returned import protocol
from stallfree.spec.types import Request

from .cache import Cache
from .keys import BlockKey, Content, content_keys, own_key


@dataclass(slots=True)
class PrefixTrack(PagedTrack):
    keys: list[int] = field(default_factory=list)  # keys of its content blocks
    shared: list[BlockKey | None] = field(default_factory=list)  # key held for each leading content block

    def key(self, j: int) -> tuple[BlockKey, bool]:
        """Block `j`'s key, and whether the cache counts its holders (content blocks; own ones not)."""
        return (self.keys[j], True) if j < len(self.keys) else (own_key(self.rid, j), False)


@dataclass(slots=True)
class PrefixShadow(PagedShadow):
    cache: Cache = field(default_factory=lambda: Cache(0))
    offered: Content = ()  # the content of the request being added (set by the monitor for accept)
    num_hits: int = 0  # admissions that held at least one cached block

    def __post_init__(self) -> None:
        PagedShadow.__post_init__(self)
        self.cache = Cache(self.pool.num_blocks)

    def accept(self, request: Request) -> None:
        track = PrefixTrack(request, keys=content_keys(self.offered, self.pool.block_size))
        live = [*self.waiting, *self.running.values()]
        track.ahead_work = sum(t.request.prompt_len + t.request.max_new for t in live)
        self.tracks[request.rid] = track
        self.ended.pop(request.rid, None)
        self.waiting.append(track)

    def _leave_running(self, track: PagedTrack) -> None:
        release(self.cache, track, self.pool.block_size)  # type: ignore[arg-type]
        PagedShadow._leave_running(self, track)
        self.free_blocks = self.cache.num_free

    def end(self, track: PagedTrack, reason: Reason) -> None:
        PagedShadow.end(self, track, reason)
        for j in range(self.pool.peak(track.request) + 1):
            self.cache.drop(own_key(track.rid, j))
        self.free_blocks = self.cache.num_free


def release(cache: Cache, track: PrefixTrack, bs: int) -> int:
    """`track` lets its blocks go, last first; returns how many become free (FREE-AT-ZERO)."""
    held = blocks_for(track.num_computed, bs)
    full = track.num_computed // bs
    freed = held - full
    cache.num_empty += freed  # the part-filled last block
    for j in reversed(range(full)):
        key, counted = track.key(j)
        freed += cache.let_go(track.shared[j] if j < len(track.shared) else key, counted)
    track.shared = []
    return freed


def match(cache: Cache, track: PrefixTrack, bs: int) -> tuple[int, int]:
    """(blocks, of which free cached) of the longest run of `track`'s leading cached blocks, within
    its prefill less its last token (HIT-SAME-TOKENS)."""
    num = revived = 0
    for j in range((track.target - 1) // bs):
        key, _ = track.key(j)
        if key in cache.lru:
            revived += 1
        elif key not in cache.refs:
            break
        num += 1
    return num, revived


class PrefixFacts(PagedFacts):
    """The paged facts of one step, plus the cache: what the plan claims each admission took from the
    cache, what the contract expects, and the free blocks as the plan's memory is taken."""

    __slots__ = ("claimed", "evicted", "expected", "free_after", "free_end", "head", "kept", "planned_cached",
                 "reported_cached", "short")

    def __init__(self, step: int) -> None:
        super().__init__(step)
        self.claimed: dict[int, int] = {}  # rid -> cached tokens the plan says it holds
        self.expected: dict[int, tuple[int, int]] = {}  # rid -> (blocks hit, of which revived)
        self.free_after: list[int] = []  # free blocks after each admission, in plan order
        self.free_end = 0
        self.short = 0
        self.head: tuple[PrefixTrack, int, int] | None = None  # the next waiting head and its hit
        self.reported_cached: tuple[object, ...] | None = None  # the scheduler's `cached` after the step
        self.planned_cached: tuple[object, ...] | None = None  # ... and after schedule()
        self.evicted: list[BlockKey] = []  # the blocks the contract evicts for this plan
        self.kept: list[BlockKey] = []  # the free cached blocks the contract keeps after it


def read_cached(shadow: PrefixShadow, plan: object, facts: PrefixFacts) -> None:
    """The plan's `cached` claims, on admitted rids; each admission's chunk starts after its claim."""
    admitted = {c.track.rid: c for c in facts.admitted}
    try:
        pairs = [(rid, n) for rid, n in getattr(plan, "cached", ())]
    except (TypeError, ValueError):
        raise protocol(shadow.step, f"the plan's cached is {getattr(plan, 'cached', None)!r:.80}, not (rid, tokens) "
                       "pairs") from None
    for rid, n in pairs:
        if type(rid) is not int or rid not in admitted or type(n) is not int or n < 0 or rid in facts.claimed:
            raise protocol(shadow.step, f"the plan says admission rid {rid!r} holds {n!r} cached tokens: not an "
                           "admission of this step (or named twice), or not a count")
        facts.claimed[rid] = n
        admitted[rid].start = n


def allocate(shadow: PrefixShadow, cache: Cache, facts: PrefixFacts, commit: bool) -> None:
    """The plan's memory in plan order on `cache`; with `commit`, the admitted tracks hold their hits."""
    bs = shadow.pool.block_size
    for track, n in facts.decodes:
        cache.take(blocks_for(track.num_computed + n, bs) - blocks_for(track.num_computed, bs))
    for c in facts.chunks:
        cache.take(blocks_for(c.start + c.n, bs) - blocks_for(c.start, bs))
    for c in facts.admitted:
        admitted = cast(PrefixTrack, c.track)
        num, revived = match(cache, admitted, bs)
        for j in range(max(num, len(admitted.keys)), shadow.pool.peak(admitted.request) + 1):
            cache.drop(own_key(admitted.rid, j))  # its own cached blocks past the hit: computed again
        for j in range(num):
            key, counted = admitted.key(j)
            cache.hold(key, counted)
            if commit and counted:
                admitted.shared.append(key)
        if commit:
            admitted.num_computed = num * bs
            shadow.num_hits += num > 0
        facts.expected[admitted.rid] = (num, revived)
        cache.take(blocks_for(num * bs + c.n, bs) - num)
        facts.free_after.append(cache.num_free - cache.short)
    facts.free_end, facts.short = cache.num_free - cache.short, cache.short
    if not commit:
        facts.evicted, facts.kept = cache.evicted, list(cache.lru)
    rids = {c.track.rid for c in facts.admitted}
    head = cast("PrefixTrack | None", next((t for t in shadow.waiting if t.rid not in rids), None))
    if head is not None:
        facts.head = (head, *match(cache, head, bs))


def register(shadow: PrefixShadow, facts: PrefixFacts) -> None:
    """The content blocks the step's chunks filled are cached, in plan order (a key already cached
    leaves the block a private copy)."""
    bs = shadow.pool.block_size
    for c in facts.chunks + facts.admitted:
        track = cast(PrefixTrack, c.track)
        full = min(track.num_computed // bs, len(track.keys))
        while len(track.shared) < full:
            key = track.keys[len(track.shared)]
            track.shared.append(key if shadow.cache.register(key) else None)


def apply(shadow: PrefixShadow, facts: PrefixFacts) -> None:
    """Action: the step ran (the paged design's `apply`, with the cache): memory in plan order,
    admissions, computed tokens, the filled blocks cached, emitted tokens, then ends."""
    step = facts.step
    allocate(shadow, shadow.cache, facts, commit=True)
    for chunk in facts.admitted:
        start_running(shadow, chunk.track, step)
    for track, n in facts.decodes:
        track.num_computed += n
    for chunk in facts.chunks + facts.admitted:
        track = chunk.track
        track.num_computed = min(track.target, track.num_computed + chunk.n)
        if track.num_computed == track.target:
            track.is_ready = True
            shadow.num_ready += 1
            del shadow.prefilling[track.rid]
    register(shadow, facts)
    count_emitted(shadow, facts)
    shadow.free_blocks = shadow.cache.num_free
    end_all(shadow, facts)
    shadow.free_blocks = shadow.cache.num_free
    shadow.step = step + 1
