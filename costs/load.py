"""What a step asks of the hardware, in the units the cost model prices."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StepLoad:
    """The work of one step.

    `num_tokens` positions run through every weight (prefill chunk tokens plus one per decode).
    `attention_pairs` counts (query, cached position) pairs: a chunk of n tokens starting at
    position s is causal, so its queries see s+1, s+2, ..., s+n positions; a decode at context c sees c.
    `kv_read_tokens` counts cached positions read back: a chunk reads the s before it, a decode c - 1.
    """

    num_tokens: int
    attention_pairs: int = 0
    kv_read_tokens: int = 0

    @staticmethod
    def chunk_pairs(start: int, n: int) -> int:
        """Attention pairs of a causal chunk of `n` prompt positions from `start`."""
        return n * start + n * (n + 1) // 2
