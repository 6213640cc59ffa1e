"""Weights, shape and vocabulary from a GGUF file (the llama.cpp format), read with the `gguf`
package: quantized tensors (Q4_1, Q8_0, ...) are dequantized to float32 in numpy, whole, and each
rank keeps its shard as with any other source.

GGUF stores the query and key projections of a Llama model permuted for the interleaved rotary
layout (rotation pairs are adjacent rows); the model here rotates in the half-split layout (pairs
are D/2 rows apart), so `unpermute` restores the checkpoint's original row order.
"""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch

from stallfree.spec import InvalidField

from .config import ModelConfig

# GGUF tensor names -> Llama checkpoint names (per layer: blk.{i}.NAME -> model.layers.{i}.NAME).
LAYER_NAMES = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
}
TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}


def checkpoint_key(gguf_name: str) -> str:
    """`blk.3.attn_q.weight` -> `model.layers.3.self_attn.q_proj.weight`."""
    stem, _, suffix = gguf_name.rpartition(".")
    if stem.startswith("blk."):
        _, index, kind = stem.split(".", 2)
        return f"model.layers.{index}.{LAYER_NAMES[kind]}.{suffix}"
    return f"{TOP_NAMES[stem]}.{suffix}"


def unpermute(w: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Undo GGUF's rotary permutation of a q/k projection [H * D, in]: within each head, GGUF row
    2j + s holds the original row s * D/2 + j (s in {0, 1})."""
    out, width = w.shape
    return w.reshape(num_heads, out // num_heads // 2, 2, width).transpose(1, 2).reshape(out, width)


def permute(w: torch.Tensor, num_heads: int) -> torch.Tensor:
    """GGUF's permutation (the inverse of `unpermute`), for tests."""
    out, width = w.shape
    return w.reshape(num_heads, 2, out // num_heads // 2, width).transpose(1, 2).reshape(out, width)


class GGUFCheckpoint:
    """One GGUF file, opened once (the reader maps the file; tensors are dequantized on request)."""

    def __init__(self, path: Path) -> None:
        import gguf

        self.path = Path(path)
        try:
            self.reader = gguf.GGUFReader(str(self.path))
        except (OSError, ValueError) as error:
            raise InvalidField(f"checkpoint {str(self.path)!r}: {type(error).__name__}: {error}") from None

    def field(self, key: str) -> Any:
        f = self.reader.fields.get(key)
        if f is None:
            raise InvalidField(f"checkpoint {str(self.path)!r} lacks metadata field {key!r}")
        return f.contents()

    def config(self, name: str) -> ModelConfig:
        arch = self.field("general.architecture")
        if arch != "llama":
            raise InvalidField(f"checkpoint {str(self.path)!r}: general.architecture={arch!r}; only 'llama' runs")
        p = f"{arch}."
        return ModelConfig(
            name, hidden=self.field(p + "embedding_length"), num_layers=self.field(p + "block_count"),
            num_heads=self.field(p + "attention.head_count"), num_kv_heads=self.field(p + "attention.head_count_kv"),
            ffn=self.field(p + "feed_forward_length"), vocab=len(self.reader.fields["tokenizer.ggml.tokens"].data),
            rms_eps=float(self.field(p + "attention.layer_norm_rms_epsilon")),
            rope_theta=float(self.field(p + "rope.freq_base")),
        )

    @cached_property
    def tensors(self) -> dict[str, Any]:
        """Llama checkpoint name -> the GGUF tensor."""
        return {checkpoint_key(t.name): t for t in self.reader.tensors}

    def tensor(self, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        """The whole tensor `name` (Llama naming) as float32; a missing LM head is the embedding (tied)."""
        import gguf

        key = "model.embed_tokens.weight" if name == "lm_head.weight" and name not in self.tensors else name
        if key not in self.tensors:
            raise InvalidField(f"checkpoint {str(self.path)!r} lacks tensor {name!r}")
        t = self.tensors[key]
        data = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        w = torch.from_numpy(data.reshape(shape).copy())
        if key.endswith(("q_proj.weight", "k_proj.weight")):
            heads = "attention.head_count" if "q_proj" in key else "attention.head_count_kv"
            w = unpermute(w, self.field(f"llama.{heads}"))
        return w

    def sha256(self) -> str:
        digest = hashlib.sha256()
        with open(self.path, "rb") as f:
            while chunk := f.read(1 << 22):
                digest.update(chunk)
        return digest.hexdigest()
