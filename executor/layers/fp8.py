"""FP8 matmuls: weights as float8_e4m3fn with one scale per output channel, activations quantized
per token at run time, y = (xq @ wq^T) * x_scale * w_scale.

Row-wise scales on both sides keep each token's result independent of what else is in the batch
(a per-tensor activation scale would let one loud token change every other token's rounding).

Two kernels compute the same product. On CUDA, torch._scaled_mm. On the CPU build, _scaled_mm casts
the whole fp8 weight to float on every call (about 15 ms for the tiny model's LM head against
0.6 ms otherwise), so there the weight is unpacked once at load, through the table of all 256 fp8
values, and the quantized activations are unpacked the same way each call: the same numbers, the
same rounding, a plain float matmul (tests check the two kernels agree exactly).
"""

from __future__ import annotations

import torch

FP8 = torch.float8_e4m3fn
FP8_E4M3_MAX = 448.0  # the largest finite float8_e4m3fn
MIN_SCALE = 1e-12  # floor for an all-zero row: its scale must not be 0 (0/0 on dequantize)
FP8_VALUES = torch.arange(256, dtype=torch.uint8).view(FP8).float()  # every fp8 value, by bit pattern


def row_scale(amax: torch.Tensor) -> torch.Tensor:
    """The scale that maps a row's largest magnitude `amax` [R, 1] onto the fp8 maximum."""
    return amax.float().clamp(min=MIN_SCALE) / FP8_E4M3_MAX


def quantize_rows(x: torch.Tensor, scale: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """x [R, C] -> (q [R, C] float8_e4m3fn, scale [R, 1] float32) with x ~= q * scale. The scale
    comes from x's own rows unless given (a row split over ranks shares the whole row's scale)."""
    if scale is None:
        scale = row_scale(x.abs().amax(dim=-1, keepdim=True))  # [R, 1]
    q = (x.float() / scale).clamp(-FP8_E4M3_MAX, FP8_E4M3_MAX).to(FP8).contiguous()  # row-major, as _scaled_mm needs
    return q, scale


def unpack(q: torch.Tensor) -> torch.Tensor:
    """fp8 [..] -> the same values as float32, by table lookup (exact)."""
    return FP8_VALUES.to(q.device)[q.view(torch.uint8).long()]


def linear(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor | None,
           unpacked: torch.Tensor | None = None, x_scale: torch.Tensor | None = None) -> torch.Tensor:
    """x [T, in] @ weight [out, in]^T -> [T, out], in x's dtype.

    FP8 weights carry `scale` [1, out], and on the CPU `unpacked` [out, in] (the weight's fp8 values
    as float32); other weights are used as they are. `x_scale` [T, 1]: the activations' per-token
    scale when it is not x's own (see RowParallelLinear)."""
    if weight.dtype != FP8:
        return torch.nn.functional.linear(x, weight)
    assert scale is not None, "an fp8 weight needs its per-output-channel scale"
    if x.shape[0] == 0:  # a step that emits nothing asks the LM head for no rows
        return x.new_empty(0, weight.shape[0])
    xq, x_scale = quantize_rows(x, x_scale)  # [T, in] fp8, [T, 1]
    if unpacked is not None:
        return ((unpack(xq) @ unpacked.t()) * x_scale * scale).to(x.dtype)
    return torch._scaled_mm(xq, weight.t(), scale_a=x_scale, scale_b=scale, out_dtype=x.dtype)
