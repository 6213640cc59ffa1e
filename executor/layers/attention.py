"""Attention over the KV cache for a flat batch: each entry's queries see its own cached keys up to
their position, causal within the chunk and over the whole prefix before it.

Chunks run one sequence at a time (their context is the prefix plus the chunk); decodes, the
common case while streams run, run together, their contexts padded with the cache's zero cell and
masked out.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .batch import FlatBatch
from .kvcache import KVCache


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """q [B, Hq, n, D], k, v [B, Hkv, L, D], mask [B, 1, n, L] (True: may attend) -> [B, Hq, n, D].
    No mask: plain causal attention (n == L), which fused kernels serve."""
    gqa = q.shape[1] != k.shape[1]
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)


def paged_attention(q: torch.Tensor, cache: KVCache, batch: FlatBatch, plan: AttentionPlan) -> torch.Tensor:
    """q [T, Hq, D] (keys and values of this step already written) -> [T, Hq, D]."""
    out = torch.empty_like(q)
    for row, n, ctx in plan.chunks:
        cells = plan.ctx_cells[ctx]
        qi = q[row:row + n].transpose(0, 1).unsqueeze(0)  # [1, Hq, n, D]
        k = cache.k[cells].transpose(0, 1).unsqueeze(0)  # [1, Hkv, L, D]
        v = cache.v[cells].transpose(0, 1).unsqueeze(0)
        L = k.shape[2]
        # A chunk from position 0 is plain causal attention (no mask); else query i sits at L - n + i.
        mask = None if n == L else plan.causal(n, L, q.device)[None, None]
        o = sdpa(qi, k, v, mask)
        out[row:row + n] = o.squeeze(0).transpose(0, 1)
    if plan.decode_rows.numel():
        qd = q[plan.decode_rows].unsqueeze(2)  # [B, Hq, 1, D]
        k = cache.k[plan.decode_cells].transpose(1, 2)  # [B, Hkv, Lmax, D]
        v = cache.v[plan.decode_cells].transpose(1, 2)
        out[plan.decode_rows] = sdpa(qd, k, v, plan.decode_mask[:, None, None, :]).squeeze(2)
    return out


class AttentionPlan:
    """Index arithmetic of one batch, done once per step and shared by every layer."""

    def __init__(self, batch: FlatBatch, pad_cell: int) -> None:
        seq_lens = batch.seq_lens.tolist()
        ctx_lens = batch.ctx_lens.tolist()
        device = batch.token_ids.device
        self.ctx_cells = batch.ctx_cells
        self.chunks: list[tuple[int, int, slice]] = []  # (first row, n, its slice of ctx_cells)
        decode_rows: list[int] = []
        decode_ctx: list[tuple[int, int]] = []
        row = ctx = 0
        for n, L in zip(seq_lens, ctx_lens, strict=True):
            if n == 1:
                decode_rows.append(row)
                decode_ctx.append((ctx, L))
            else:
                self.chunks.append((row, n, slice(ctx, ctx + L)))
            row += n
            ctx += L
        self.decode_rows = torch.tensor(decode_rows, dtype=torch.long, device=device)
        width = max((L for _, L in decode_ctx), default=0)
        cells = torch.full((len(decode_ctx), width), pad_cell, dtype=torch.long, device=device)
        mask = torch.zeros((len(decode_ctx), width), dtype=torch.bool, device=device)
        for i, (start, L) in enumerate(decode_ctx):
            cells[i, :L] = batch.ctx_cells[start:start + L]
            mask[i, :L] = True
        self.decode_cells, self.decode_mask = cells, mask  # [B, Lmax] each
        self._causal: dict[tuple[int, int], torch.Tensor] = {}

    def causal(self, n: int, L: int, device: torch.device) -> torch.Tensor:
        key = (n, L)
        if key not in self._causal:
            query_pos = torch.arange(L - n, L, device=device)[:, None]
            self._causal[key] = torch.arange(L, device=device)[None, :] <= query_pos
        return self._causal[key]


def dense_causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """One whole sequence, no cache: q [T, Hq, D], k, v [T, Hkv, D] -> [T, Hq, D]."""
    T = q.shape[0]
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    o = sdpa(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], mask[None, None])
    return o[0].transpose(0, 1)
