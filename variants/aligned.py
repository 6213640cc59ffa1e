"""Block-aligned chunks: the policy with every chunk but a prompt's last rounded down to whole KV blocks.

A paged KV cache writes a chunk's keys and values block by block; a chunk that ends inside a block
leaves the next chunk to start there, so a block is written by two steps. Rounding each chunk that does
not finish its prompt down to a multiple of the block size keeps every chunk on block boundaries
(TensorRT-LLM chunks in units of its chunk size, SGLang in multiples of its page size). The cost is
budget: up to b - 1 tokens a step stay unused while a prompt waits for a whole block to fit.

The contract it keeps is `stallfree.spec.variants.aligned.contract(b)`: a prompt left unfinished ends the
step's prefill, and a budget below b is refused.
"""

from __future__ import annotations

from stallfree.spec import InvalidField, check_int
from stallfree.spec.variants.aligned import DEFAULT_BLOCK_SIZE, aligned_chunk

from .batched import Batched
from .stepwise import Stepwise, StepwiseSequence


class Blocks:
    """The block size of an aligned scheduler, checked against the budget before anything else is made."""

    block_size: int

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        check_int("block_size", block_size)
        if type(token_budget) is int and block_size > token_budget:
            raise InvalidField(
                f"block_size {block_size} exceeds token_budget {token_budget}: a prompt longer than the budget "
                "could never take an aligned chunk"
            )
        super().__init__(token_budget, max_seqs, kv_tokens)  # type: ignore[call-arg]
        self.block_size = block_size


class Aligned(Blocks, Stepwise):
    """Decodes, then partial prompts, then admissions, each chunk aligned to `block_size` tokens."""

    def chunk(self, seq: StepwiseSequence, left: int) -> int:
        return aligned_chunk(seq.request.prompt_len - seq.num_prefilled, left, self.block_size)

    def plan_partials(self, plan: list[tuple[int, int]], left: int) -> int:
        for seq in self.running.values():
            if not seq.is_ready:
                n = self.chunk(seq, left)
                if n:
                    plan.append((seq.rid, n))
                if n < seq.request.prompt_len - seq.num_prefilled:
                    return 0  # ALIGNED-PARTIAL-NEXT: a prompt left unfinished ends the step's prefill
                left -= n
        return left

    def admit(self, plan: list[tuple[int, int]], left: int) -> int:
        while left and self.waiting:
            seq = self.next_admission()
            if seq is None or self.chunk(seq, left) == 0:
                break
            left = self.start(seq, plan, left)
        return left

    def start(self, seq: StepwiseSequence, plan: list[tuple[int, int]], left: int) -> int:
        self.take(seq)
        n = self.chunk(seq, left)
        plan.append((seq.rid, n))
        return left - n if n == seq.request.prompt_len else 0


class BatchedAligned(Blocks, Batched):
    """The same policy in the reference's incremental form (`batched`): the one the simulator runs."""

    def chunk(self, remaining: int, left: int) -> int:
        return aligned_chunk(remaining, left, self.block_size)


def with_block(block_size: int) -> type[BatchedAligned]:
    """`BatchedAligned` with `block_size` as its default, as a factory of the plain signature."""

    class AlignedTo(BatchedAligned):
        def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
            super().__init__(token_budget, max_seqs, kv_tokens, block_size)

    AlignedTo.__name__ = AlignedTo.__qualname__ = f"Aligned{block_size}"
    return AlignedTo


Aligned16, Aligned32, Aligned64, Aligned128, Aligned256 = (with_block(b) for b in (16, 32, 64, 128, 256))
