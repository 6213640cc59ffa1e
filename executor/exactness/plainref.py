"""An independent reference in the main job: a Llama forward pass written in numpy, in float64, on
a GGUF file read here and nowhere else. It shares none of the executor's math: it reads the shape,
rope theta and norm epsilon from the file's metadata itself (not `gguf_file.config`), keeps the
query and key rows in the file's own interleaved layout and rotates adjacent pairs (so no
`unpermute`), and has its own RMSNorm, rotary, grouped-query attention, SwiGLU and tied LM head. What
it shares is the `gguf` package's dequantization (the file's numbers) and the token ids (the chat
template is the tokenizer's, judged by the text it produces).

A bug in the math the executor shares with its own exactness reference (`equivalence.py` runs the
same `Transformer` unbatched) passes exactness and fails here: a wrong rope theta, a wrong norm
epsilon, a wrong q/k un-permutation. float64 here, so the difference is the executor's own fp32
rounding alone, bounded by `independent.depth_tolerance`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


class PlainLlama:
    """The GGUF file's Llama model, as float64 numpy arrays (the whole model: 135 M values for SmolLM2)."""

    def __init__(self, path: Path) -> None:
        import gguf

        reader = gguf.GGUFReader(str(path))
        meta = {f.name: f.contents() for f in reader.fields.values() if not f.name.startswith("tokenizer.")}
        self.layers = int(meta["llama.block_count"])
        self.heads = int(meta["llama.attention.head_count"])
        self.kv_heads = int(meta["llama.attention.head_count_kv"])
        self.eps = float(meta["llama.attention.layer_norm_rms_epsilon"])
        self.theta = float(meta["llama.rope.freq_base"])
        self.w: dict[str, np.ndarray] = {}
        for t in reader.tensors:
            data = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float64)
            self.w[t.name] = data.reshape(tuple(int(n) for n in reversed(t.shape)))
        self.head_dim = self.w["blk.0.attn_q.weight"].shape[0] // self.heads

    def norm(self, x: np.ndarray, name: str) -> np.ndarray:
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * self.w[name]

    def rotate(self, x: np.ndarray) -> np.ndarray:
        """x [T, heads, D] in the file's interleaved layout: pair (2j, 2j+1) turns by position x theta^(-2j/D)."""
        d = self.head_dim
        angle = np.arange(x.shape[0])[:, None] * self.theta ** (-np.arange(0, d, 2) / d)[None, :]  # [T, D/2]
        cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
        even, odd = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = even * cos - odd * sin
        out[..., 1::2] = even * sin + odd * cos
        return out

    def attention(self, x: np.ndarray, i: int) -> np.ndarray:
        T, d, group = x.shape[0], self.head_dim, self.heads // self.kv_heads
        q = self.rotate((x @ self.w[f"blk.{i}.attn_q.weight"].T).reshape(T, self.heads, d))
        k = self.rotate((x @ self.w[f"blk.{i}.attn_k.weight"].T).reshape(T, self.kv_heads, d))
        v = (x @ self.w[f"blk.{i}.attn_v.weight"].T).reshape(T, self.kv_heads, d)
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)  # query head h reads KV head h // group
        scores = np.einsum("thd,shd->hts", q, k) / np.sqrt(d)
        scores = np.where(np.tri(T, dtype=bool)[None], scores, -np.inf)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        return np.einsum("hts,shd->thd", p, v).reshape(T, -1) @ self.w[f"blk.{i}.attn_output.weight"].T

    def mlp(self, x: np.ndarray, i: int) -> np.ndarray:
        gate = x @ self.w[f"blk.{i}.ffn_gate.weight"].T
        up = x @ self.w[f"blk.{i}.ffn_up.weight"].T
        return (gate / (1.0 + np.exp(-gate)) * up) @ self.w[f"blk.{i}.ffn_down.weight"].T

    def logits(self, tokens: list[int]) -> np.ndarray:
        """[len(tokens), vocab] float64: every position's logits, causal, from position 0."""
        h = self.w["token_embd.weight"][np.asarray(tokens)]
        for i in range(self.layers):
            h = h + self.attention(self.norm(h, f"blk.{i}.attn_norm.weight"), i)
            h = h + self.mlp(self.norm(h, f"blk.{i}.ffn_norm.weight"), i)
        head = self.w.get("output.weight", self.w["token_embd.weight"])  # tied when the file has no output
        return self.norm(h, "output_norm.weight") @ head.T


def plain_logits(path: Path, requests: dict[int, Any]) -> dict[int, np.ndarray]:
    """rid -> the logits [outputs, vocab] at every position that emitted a token, teacher-forced with
    the run's own outputs (as `equivalence.reference_logits`); `requests`: rid -> a RequestResult."""
    model = PlainLlama(path)
    return {rid: model.logits(list(r.prompt) + list(r.outputs[:-1]))[len(r.prompt) - 1:]
            for rid, r in sorted(requests.items())}
