"""Independent references: logits of the same GGUF checkpoint from code that shares none of the
executor's math, so a bug in the math the executor shares with its own exactness reference (a wrong
rope theta, norm epsilon or q/k un-permutation) shows. Two of them:

- in the main job (`independent_check`, rule name INDEPENDENT): `plainref.PlainLlama`, a numpy
  float64 forward pass on the file read on its own (seconds for SmolLM2);
- optional, in tests/test_executor_independent.py: Hugging Face `transformers` loading the same
  file (the `reference` extra: transformers and accelerate; offline, nothing downloaded; minutes
  to load here, so not in the main job).

The tolerance comes from fp32 rounding over the model's depth: each of the
2 residual branches of each layer adds a matmul whose dot products of up to `ffn` terms round by
about sqrt(ffn) fp32 ulps (2^-24, random-walk accumulation) of the values summed, and the residual
stream carries every branch's error to the logits, so the bound is
2 x num_layers x sqrt(ffn) x 2^-24 x max(1, largest |logit|) (4.9e-3 for SmolLM2's 30 layers, FFN 1,536,
logits up to 35). The reference here is float64, so the whole of that bound is the executor's fp32
rounding (against transformers, itself fp32, the same bound is taken for both runs together).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from stallfree.spec.verdict import Verdict

from ..models.config import ModelConfig

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


@dataclass(frozen=True, slots=True)
class Independence:
    """The run's fp32 logits (or, in an fp8 run, its one-rank fp32 reference's) against PlainLlama's."""

    of: str  # whose logits were compared
    num_rows: int
    max_logit_diff: float
    tolerance: float
    top1_agree: int

    @property
    def ok(self) -> bool:
        return self.max_logit_diff <= self.tolerance

    def summary(self) -> str:
        verdict = (Verdict.HOLDS if self.ok else Verdict.BROKEN).label
        return (f"INDEPENDENT      {verdict}: {self.of} against an independent numpy float64 forward pass of the "
                f"GGUF file ({self.num_rows} rows): max |logit diff| {self.max_logit_diff:.2e} (tolerance "
                f"{self.tolerance:.2e}, fp32 rounding over {DEPTH_WHY}); top-1 equal at "
                f"{self.top1_agree}/{self.num_rows}")


DEPTH_WHY = "the depth: 2 x layers x sqrt(ffn) x 2^-24 x max|logit|"


def independent_check(of: str, cfg: ModelConfig, gguf: Path, requests: dict[int, Any],
                      logits: dict[int, torch.Tensor]) -> Independence:
    """`logits` (rid -> [outputs, vocab], fp32) against `plainref.plain_logits` of the same sequences."""
    from .plainref import plain_logits

    theirs = plain_logits(gguf, requests)
    a = torch.cat([logits[rid].double() for rid in sorted(theirs)])
    b = torch.cat([torch.from_numpy(theirs[rid]) for rid in sorted(theirs)])
    return Independence(of, int(a.shape[0]), float((a - b).abs().max()), depth_tolerance(cfg, b),
                        int((a.argmax(-1) == b.argmax(-1)).sum()))
