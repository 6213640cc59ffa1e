"""The step path of the paged design (`stallfree.paged`): KV in blocks taken as positions are
computed, a block table per request that attention gathers, blocks returned when a request ends or
is preempted, and recompute on the real model.

The executor follows the plan, never the scheduler's internals: a chunk or decode whose positions
start a block takes one; a request the plan names in `preempted` gives all its blocks back (poisoned
before the next forward) and forgets its KV, keeping its emitted tokens; when it is planned again it
prefills its prompt and those tokens, and the chunk that completes them emits its next token. After
every step its free blocks must equal the contract's and the scheduler's (rule BLOCKS), and each
running request must hold exactly ceil(positions in KV / block_size) blocks.
"""

from __future__ import annotations

from typing import Any

from stallfree.spec.paged.shadow import blocks_for

from .blocks import BlockAllocator
from .checks import RealPathViolation
from .executor import Executor
from .stream import Stream

MEMORY_RULE = "BLOCKS"  # the paged design's rule for KV memory (stallfree.spec.paged.rules)


class PagedExecutor(Executor):
    """Drives a paged monitor (`stallfree.spec.PagedMonitor`) and its scheduler on the model."""

    tokens_rule = "TOKENS-KEPT"  # the paged registry's TOKENS, widened across preemptions
    prefill_rule = "RECOMPUTE"  # its PREFILL-ONCE: each residency's prefill, in order, each position once
    memory_rule = MEMORY_RULE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        pool = self.monitor.shadow.pool
        self.blocks = BlockAllocator(pool.num_blocks, pool.block_size)
        self.tables: dict[int, list[int]] = {}  # rid -> its blocks, in position order

    @property
    def block_size(self) -> int:
        return self.blocks.block_size

    @property
    def free_memory(self) -> int:
        return self.blocks.num_free

    def reserve(self, step: int, rid: int, num_cells: int) -> list[int]:
        """A paged request holds nothing at admission: its blocks come as its positions are computed."""
        self.tables[rid] = []
        return []

    def grow(self, step: int, stream: Stream, num_positions: int) -> None:
        """Take the blocks that positions 0 .. num_positions - 1 need and extend the block table."""
        table = self.tables[stream.rid]
        while len(table) * self.block_size < num_positions:
            try:
                block = self.new_block()
            except ValueError as error:
                raise RealPathViolation(MEMORY_RULE, step, f"rid {stream.rid} at position {num_positions - 1}: "
                                        f"{error}") from None
            table.append(block)
            cells = self.blocks.cells(block)
            stream.cells.extend(cells)
            self.ledger.extend(stream.rid, cells)

    def new_block(self) -> int:
        """A free block for a request's next positions. Raises ValueError (nothing taken) if none is free."""
        return self.blocks.take()

    def take_back(self, step: int, plan: object) -> None:
        """The plan's preempted requests give their blocks back and forget their KV (RECOMPUTE)."""
        for rid in getattr(plan, "preempted", ()):
            stream = self.streams.get(rid)
            if stream is None:
                raise RealPathViolation("PREEMPT-ORDER", step, f"the plan preempts rid {rid}, which is not running")
            self.give_back(stream, "was preempted", step)
            stream.forget()
            self.tables[rid] = []
            self.ledger.reserve(rid, [])

    def give_back(self, stream: Stream, why: str, step: int) -> None:
        """Every block of `stream` back to the pool, its cells free in the ledger and poisoned."""
        self.blocks.release(self.tables.pop(stream.rid, []))
        self.ledger.release(stream.rid, why, step)
        self.to_poison.extend(stream.cells)

    def finish(self, stream: Stream) -> None:
        """Return every block of the ended request; they are poisoned before the next forward."""
        del self.streams[stream.rid]
        self.done[stream.rid] = stream
        self.give_back(stream, *self.ending(stream))

    def check_memory(self, step: int) -> None:
        """BLOCKS: free blocks equal the contract's and the scheduler's; each running request holds
        exactly ceil(its positions in KV / block_size) blocks."""
        shown = getattr(self.monitor.scheduler, "free_blocks", None)
        contract = self.monitor.shadow.free_blocks
        free = self.free_memory
        if free != contract or (type(shown) is int and shown != free):
            raise RealPathViolation(MEMORY_RULE, step, f"the executor has {free} free KV blocks; "
                                    f"the contract leaves {contract}, the scheduler shows {shown}")
        for rid, table in self.tables.items():
            written = self.ledger.num_written.get(rid, 0)
            if len(table) != blocks_for(written, self.block_size):
                raise RealPathViolation(MEMORY_RULE, step, f"rid {rid} holds {len(table)} blocks for {written} "
                                        f"positions in KV (blocks of {self.block_size})")

    def check_drained(self) -> None:
        step = self.step_index
        if self.streams:
            raise RealPathViolation(MEMORY_RULE, step, f"the run ended with rid(s) {sorted(self.streams)[:5]} live")
        if self.free_memory != self.blocks.num_blocks:
            raise RealPathViolation(MEMORY_RULE, step, f"the run ended with {self.free_memory} of "
                                    f"{self.blocks.num_blocks} blocks free")
