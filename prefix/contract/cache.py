"""The contract's account of the block cache: which keyed blocks running requests hold (and how many
hold each), which free blocks are still cached and in what order they were freed, and how many
free blocks are empty. Written for the shadow alone; the scheduler keeps its own.

The free blocks are the empty ones and the free cached ones. A new block is an empty one while any
is left, else the least recently freed cached block, evicted (EVICT-LRU).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from .keys import BlockKey


@dataclass(slots=True)
class Cache:
    num_empty: int
    refs: dict[BlockKey, int] = field(default_factory=dict)  # held keyed blocks -> holders
    lru: OrderedDict[BlockKey, None] = field(default_factory=OrderedDict)  # free cached, oldest first
    num_evictions: int = 0
    short: int = 0  # blocks asked for beyond the free ones (BLOCKS is broken if ever > 0)
    evicted: list[BlockKey] = field(default_factory=list)  # evicted since this copy was made

    @property
    def num_free(self) -> int:
        return self.num_empty + len(self.lru)

    def copy(self) -> Cache:
        return Cache(self.num_empty, dict(self.refs), OrderedDict(self.lru), self.num_evictions, self.short)

    def is_cached(self, key: BlockKey) -> bool:
        return key in self.refs or key in self.lru

    def take(self, num: int) -> None:
        """`num` new blocks: empty ones first, then the least recently freed cached ones."""
        for _ in range(num):
            if self.num_empty:
                self.num_empty -= 1
            elif self.lru:
                self.evicted.append(self.lru.popitem(last=False)[0])
                self.num_evictions += 1
            else:
                self.short += 1

    def hold(self, key: BlockKey, counted: bool) -> None:
        """A request holds cached block `key` (`counted`: in `refs`, which own blocks are not)."""
        if key in self.lru:
            del self.lru[key]
            if counted:
                self.refs[key] = 1
        elif counted:
            self.refs[key] += 1

    def register(self, key: BlockKey) -> bool:
        """A request filled block `key`: it is cached, held once, unless the key is cached already
        (then the block is a private copy). True if it was registered."""
        if self.is_cached(key):
            return False
        self.refs[key] = 1
        return True

    def let_go(self, key: BlockKey | None, counted: bool) -> bool:
        """A request lets block `key` go (None: a private copy). True if it is free now (FREE-AT-ZERO)."""
        if key is None:
            self.num_empty += 1
            return True
        if counted:
            self.refs[key] -= 1
            if self.refs[key]:
                return False
            del self.refs[key]
        self.lru[key] = None
        return True

    def drop(self, key: BlockKey) -> None:
        """A free cached block no one can hit any more becomes empty."""
        if key in self.lru:
            del self.lru[key]
            self.num_empty += 1
