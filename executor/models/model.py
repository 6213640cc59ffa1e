"""A Llama-architecture decoder built from plain modules and the tensor-parallel layers.

embedding -> N x [RMSNorm -> attention (grouped-query, rotary) -> residual -> RMSNorm -> SwiGLU MLP
-> residual] -> final norm -> LM head. Module names follow the Llama checkpoint layout, so a
checkpoint's tensors load by name. Shapes are per rank: Hq and Hkv are this rank's heads.
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from ..layers.attention import AttentionPlan, dense_causal_attention, paged_attention
from ..layers.batch import FlatBatch
from ..layers.group import Group
from ..layers.kvcache import KVCache
from ..layers.parallel import ColumnParallelLinear, ParallelLMHead, RowParallelLinear, VocabParallelEmbedding
from .config import ModelConfig


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float, dtype: torch.dtype) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden, dtype=dtype), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def rotate(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotary positions, half-split layout: x [T, H, D], positions [T]."""
    half = x.shape[-1] // 2
    inv_freq = theta ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)  # [D/2]
    angles = positions.float()[:, None] * inv_freq[None, :]  # [T, D/2]
    cos, sin = angles.cos()[:, None, :], angles.sin()[:, None, :]  # [T, 1, D/2]
    x1, x2 = x.float()[..., :half], x.float()[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, group: Group, wdtype: torch.dtype) -> None:
        super().__init__()
        D, world = cfg.head_dim, group.world_size
        self.num_heads, self.num_kv_heads, self.head_dim = cfg.num_heads // world, cfg.num_kv_heads // world, D
        self.theta = cfg.rope_theta
        self.q_proj = ColumnParallelLinear(cfg.hidden, cfg.num_heads * D, group, wdtype)
        self.k_proj = ColumnParallelLinear(cfg.hidden, cfg.num_kv_heads * D, group, wdtype)
        self.v_proj = ColumnParallelLinear(cfg.hidden, cfg.num_kv_heads * D, group, wdtype)
        self.o_proj = RowParallelLinear(cfg.num_heads * D, cfg.hidden, group, wdtype)

    def qkv(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, ...]:
        T = x.shape[0]
        q = self.q_proj(x).view(T, self.num_heads, self.head_dim)  # [T, Hq, D]
        k = self.k_proj(x).view(T, self.num_kv_heads, self.head_dim)  # [T, Hkv, D]
        v = self.v_proj(x).view(T, self.num_kv_heads, self.head_dim)
        return rotate(q, positions, self.theta), rotate(k, positions, self.theta), v

    def forward(self, x: torch.Tensor, batch: FlatBatch, plan: AttentionPlan, cache: KVCache) -> torch.Tensor:
        q, k, v = self.qkv(x, batch.positions)
        cache.write(batch.write_cells, k, v)
        o = paged_attention(q, cache, batch, plan)  # [T, Hq, D]
        return self.o_proj(o.reshape(x.shape[0], -1))

    def dense(self, x: torch.Tensor) -> torch.Tensor:
        """One whole sequence from position 0, no cache: the unbatched reference path."""
        q, k, v = self.qkv(x, torch.arange(x.shape[0], device=x.device))
        return self.o_proj(dense_causal_attention(q, k, v).reshape(x.shape[0], -1))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig, group: Group, wdtype: torch.dtype) -> None:
        super().__init__()
        self.gate_proj = ColumnParallelLinear(cfg.hidden, cfg.ffn, group, wdtype)
        self.up_proj = ColumnParallelLinear(cfg.hidden, cfg.ffn, group, wdtype)
        self.down_proj = RowParallelLinear(cfg.ffn, cfg.hidden, group, wdtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # [T, ffn/world] -> [T, H]


class Layer(nn.Module):
    def __init__(self, cfg: ModelConfig, group: Group, wdtype: torch.dtype, adtype: torch.dtype) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden, cfg.rms_eps, adtype)
        self.self_attn = Attention(cfg, group, wdtype)
        self.post_attention_layernorm = RMSNorm(cfg.hidden, cfg.rms_eps, adtype)
        self.mlp = MLP(cfg, group, wdtype)

    def forward(self, x: torch.Tensor, batch: FlatBatch, plan: AttentionPlan, cache: KVCache) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), batch, plan, cache)
        return x + self.mlp(self.post_attention_layernorm(x))

    def dense(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn.dense(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Transformer(nn.Module):
    """`wdtype`: the decoder layers' matmul weights (float8_e4m3fn, bfloat16, float32); `adtype`:
    activations, and the embedding, norms and LM head, which stay in it whatever `wdtype` is (as
    FP8 inference stacks keep them: the embedding is a lookup, not a matmul, and the LM head's
    rounding lands directly on the logits the tokens are drawn from)."""

    def __init__(self, cfg: ModelConfig, group: Group, wdtype: torch.dtype, adtype: torch.dtype) -> None:
        super().__init__()
        cfg.check_divisible(group.world_size)
        self.cfg, self.group, self.adtype = cfg, group, adtype
        self.embed_tokens = VocabParallelEmbedding(cfg.vocab, cfg.hidden, group, adtype)
        self.layers = nn.ModuleList(Layer(cfg, group, wdtype, adtype) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden, cfg.rms_eps, adtype)
        self.lm_head = ParallelLMHead(cfg.hidden, cfg.vocab, group, adtype)

    def new_caches(self, kv_tokens: int, device: torch.device | str) -> list[KVCache]:
        heads = self.cfg.num_kv_heads // self.group.world_size
        return [KVCache(kv_tokens, heads, self.cfg.head_dim, self.adtype, device) for _ in self.layers]

    @torch.inference_mode()
    def forward(self, batch: FlatBatch, caches: list[KVCache],
                plan_type: type[AttentionPlan] = AttentionPlan) -> tuple[torch.Tensor, torch.Tensor]:
        """Run one step. Returns (hidden [T, H] after the final norm, logits [E, vocab] at emit rows).
        `plan_type`: how the step's attention is laid out (a broken one is a negative control)."""
        plan = plan_type(batch, caches[0].pad_cell)
        x = self.embed_tokens(batch.token_ids)  # [T, H]
        for layer, cache in zip(self.layers, caches, strict=True):
            x = layer(x, batch, plan, cache)
        h = self.norm(x)
        return h, self.lm_head(h[batch.emit_rows]).float()

    @torch.inference_mode()
    def dense(self, token_ids: torch.Tensor) -> torch.Tensor:
        """Logits [T, vocab] of one sequence run whole from position 0, without a cache."""
        x = self.embed_tokens(token_ids)
        for layer in self.layers:
            x = cast(Layer, layer).dense(x)
        return self.lm_head(self.norm(x)).float()
