"""KV blocks for the paged design: the cache's cells in fixed-size blocks of `block_size` positions,
block b holding cells b * block_size .. (b + 1) * block_size - 1. A request takes a block when its
next position starts one and gives all of them back when it ends or is preempted; its block table
(its blocks in position order) maps position p to cell table[p // block_size] * block_size +
p % block_size, which is what attention gathers."""

from __future__ import annotations


class BlockAllocator:
    def __init__(self, num_blocks: int, block_size: int) -> None:
        self.num_blocks, self.block_size = num_blocks, block_size
        self._free = list(range(num_blocks - 1, -1, -1))  # a stack: the lowest blocks go out first

    @property
    def num_free(self) -> int:
        return len(self._free)

    def take(self) -> int:
        """One free block. Raises ValueError (nothing taken) if none is free."""
        if not self._free:
            raise ValueError(f"taking a KV block with none of {self.num_blocks} free")
        return self._free.pop()

    def release(self, blocks: list[int]) -> None:
        self._free.extend(reversed(blocks))

    def cells(self, block: int) -> list[int]:
        """The cells of `block`, in position order."""
        return list(range(block * self.block_size, (block + 1) * self.block_size))
