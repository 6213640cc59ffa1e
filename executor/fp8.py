"""FP8 matmuls: weights as float8_e4m3fn with one scale per output channel, activations quantized
per token at run time, the product through torch._scaled_mm.

Row-wise scales on both sides keep each token's result independent of what else is in the batch
(a per-tensor activation scale would let one loud token change every other token's rounding), and
on the CPU build only row-wise scales take the fast kernel.
"""

from __future__ import annotations

import torch

FP8 = torch.float8_e4m3fn
FP8_E4M3_MAX = 448.0  # the largest finite float8_e4m3fn
MIN_SCALE = 1e-12  # floor for an all-zero row: its scale must not be 0 (0/0 on dequantize)


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x [R, C] -> (q [R, C] float8_e4m3fn, scale [R, 1] float32) with x ~= q * scale."""
    scale = x.abs().amax(dim=-1, keepdim=True).float().clamp(min=MIN_SCALE) / FP8_E4M3_MAX  # [R, 1]
    q = (x.float() / scale).clamp(-FP8_E4M3_MAX, FP8_E4M3_MAX).to(FP8)
    return q, scale


def linear(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor | None) -> torch.Tensor:
    """x [T, in] @ weight [out, in]^T -> [T, out], in x's dtype.

    FP8 weights carry `scale` [1, out]; other weights are used as they are (scale None)."""
    if weight.dtype != FP8:
        return torch.nn.functional.linear(x, weight)
    assert scale is not None, "an fp8 weight needs its per-output-channel scale"
    xq, x_scale = quantize_rows(x)  # [T, in] fp8, [T, 1]
    return torch._scaled_mm(xq, weight.t(), scale_a=x_scale, scale_b=scale, out_dtype=x.dtype)
