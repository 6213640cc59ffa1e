"""An FP8 run against the same requests run alone: each unbatched, unchunked on one rank in FP8, on
the run's own tokens (teacher-forced). A measurement, not a pass/fail, and why:

FP8 rounds each activation to the nearest e4m3 value, a step function. The batched and the alone
runs add the same products in other orders (chunks, batches, ranks), so an activation can differ in
its last fp32 bits; one that lies that close to the midpoint between two e4m3 neighbours rounds to
the other one, and moves by a whole e4m3 spacing at its scale (2^-3 of its binade) instead of
2^-24. The next layers see that move as a real change of input and round differently in turn, so
after 30 layers a request either saw no such flip (its logits equal within fp32 rounding) or saw
one and differs by as much as FP8's own error from fp32. A tolerance wide enough for the second
case (one e4m3 spacing at the logits' scale, 2 to 4 logits on SmolLM2) also passes a leak between
requests (a per-batch activation scale moves logits by the same amounts), and a tighter one fails a
correct run. What catches a leak in FP8 is isolation, bit for bit (`isolation.py`): the same plans,
the same orders, so no flip can differ. The figures here say how many rows saw no flip at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .equivalence import EXACT_RTOL


@dataclass(frozen=True, slots=True)
class Agreement:
    dtype: str
    num_rows: int
    rows_within_fp32: int  # rows equal to the alone run within fp32 rounding: no e4m3 rounding flipped
    max_logit_diff: float
    fp32_tol: float  # the fp32 rounding tolerance those rows are within (EXACT_RTOL x the largest |logit|)

    def summary(self) -> str:
        return (f"AGREEMENT {self.dtype:<4}  measured (not a pass/fail: see docs/executor.md): against each request "
                f"run alone in {self.dtype}, {self.rows_within_fp32}/{self.num_rows} rows equal within fp32 "
                f"rounding ({self.fp32_tol:.2e}; no e4m3 rounding flipped), max |logit diff| "
                f"{self.max_logit_diff:.3f}")


def agreement(dtype: str, run: dict[int, torch.Tensor], alone: dict[int, torch.Tensor]) -> Agreement:
    """`run` against `alone`, both rid -> logits [positions, vocab] at the same positions."""
    a = torch.cat([run[rid] for rid in sorted(alone)]).double()
    b = torch.cat([alone[rid] for rid in sorted(alone)]).double()
    tol = EXACT_RTOL * max(1.0, float(b.abs().max()))
    rows = (a - b).abs().amax(-1)  # [positions]
    return Agreement(dtype, int(a.shape[0]), int((rows <= tol).sum()), float(rows.max()), tol)
