"""A decoder-only transformer, described by the few numbers its cost depends on."""

from __future__ import annotations

from dataclasses import dataclass

from .dtypes import bytes_per_value

KV_TENSORS = 2  # each layer caches one key and one value vector per KV head
FLOPS_PER_MAC = 2  # a multiply-accumulate is two floating-point operations
ATTENTION_MATMULS = 2  # scores (Q K^T) and the weighted sum (A V)


@dataclass(frozen=True, slots=True)
class Model:
    """Shape of a model. `num_params` counts every weight (embeddings included): the weight bytes
    a step reads and, at 2 FLOPs each per token, the floor's matmul work."""

    name: str
    num_params: float
    num_layers: int
    hidden: int
    num_heads: int  # query heads
    num_kv_heads: int  # key/value heads
    head_dim: int
    ffn: int  # SwiGLU inner width
    vocab: int
    source: str  # where the figures come from

    @property
    def flops_per_token(self) -> float:
        """Weight matmul FLOPs of one token: one multiply-accumulate per parameter."""
        return FLOPS_PER_MAC * self.num_params

    @property
    def attention_flops_per_pair(self) -> float:
        """FLOPs for one query attending to one cached position, over all layers and heads."""
        return FLOPS_PER_MAC * ATTENTION_MATMULS * self.num_layers * self.num_heads * self.head_dim

    def kv_bytes_per_token(self, kv_dtype: str) -> int:
        """KV-cache bytes one token position holds, over all layers."""
        width = bytes_per_value("kv_dtype", kv_dtype)
        return KV_TENSORS * self.num_layers * self.num_kv_heads * self.head_dim * width
