"""The KV cache of one layer on one rank: a pool of `kv_tokens` cells, each holding one position's
key and value for this rank's KV heads.

Free memory is poisoned with NaN: a cell reads as NaN until a prompt or decode writes it, and again
once its request finishes, so attention that touches unwritten or freed memory turns the output NaN
and the step's finiteness check names it (rule PREFILL-ONCE). One extra cell, past the pool, holds
zeros: batched decodes pad their contexts with it (masked out, and finite so 0 x pad stays 0).
"""

from __future__ import annotations

import torch

POISON = float("nan")


class KVCache:
    def __init__(self, kv_tokens: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype,
                 device: torch.device | str) -> None:
        self.kv_tokens = kv_tokens
        self.pad_cell = kv_tokens  # the zero cell past the pool
        shape = (kv_tokens + 1, num_kv_heads, head_dim)
        self.k = torch.full(shape, POISON, dtype=dtype, device=device)  # [K + 1, Hkv, D]
        self.v = torch.full(shape, POISON, dtype=dtype, device=device)
        self.k[self.pad_cell] = 0
        self.v[self.pad_cell] = 0

    def write(self, cells: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store k, v [T, Hkv, D] at `cells` [T]."""
        self.k[cells] = k.to(self.k.dtype)
        self.v[cells] = v.to(self.v.dtype)

    def poison(self, cells: torch.Tensor) -> None:
        """Mark `cells` [n] free again: any later read before a write shows up as NaN."""
        self.k[cells] = POISON
        self.v[cells] = POISON


def kv_cache_bytes(num_layers: int, kv_tokens: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype) -> int:
    """Bytes of one rank's caches: keys and values, every layer, `kv_tokens` cells plus the zero cell."""
    return 2 * num_layers * (kv_tokens + 1) * num_kv_heads * head_dim * dtype.itemsize
