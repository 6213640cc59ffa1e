"""An independent reference: logits of the same GGUF checkpoint from Hugging Face `transformers`, a
runtime that shares none of the executor's math (its own GGUF reader and un-permutation, rotary,
norms, attention and chat-free token ids), so a bug in the math the executor shares with its own
exactness reference (a wrong rope theta, norm epsilon or q/k un-permutation) shows here.

Optional (the `reference` extra: transformers and accelerate); loaded offline from the wheel's
file, nothing downloaded. The tolerance comes from fp32 rounding over the model's depth: each of the
2 residual branches of each layer adds a matmul whose dot products of up to `ffn` terms round by
about sqrt(ffn) fp32 ulps (2^-24, random-walk accumulation) of the values summed, and the residual
stream carries every branch's error to the logits, so the bound is
2 x num_layers x sqrt(ffn) x 2^-24 x max(1, largest |logit|) (4.9e-3 for SmolLM2's 30 layers, FFN 1,536,
logits up to 35).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch

from .config import ModelConfig

FP32_ULP = 2.0**-24
RESIDUAL_BRANCHES = 2  # attention and MLP, per layer


def depth_tolerance(cfg: ModelConfig, logits: torch.Tensor) -> float:
    """fp32 rounding over the model's depth (see the module's docstring)."""
    scale = max(1.0, float(logits.abs().max()))
    return RESIDUAL_BRANCHES * cfg.num_layers * math.sqrt(cfg.ffn) * FP32_ULP * scale


def transformers_logits(gguf: Path, sequences: list[list[int]]) -> list[torch.Tensor]:
    """Each sequence's fp32 logits [T, vocab] from `transformers`, the GGUF file loaded offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    model.eval()
    with torch.inference_mode():
        return [model(torch.tensor([s], dtype=torch.int64)).logits[0].float() for s in sequences]
