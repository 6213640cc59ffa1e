"""FP8 agreement (a pass/fail): an FP8 run's logits against the same requests run alone in FP8, each
unbatched, unchunked on one rank, on the run's own tokens (teacher-forced), within a tolerance
derived from the e4m3 format.

Why not fp32's tolerance: FP8 rounds each activation to the nearest e4m3 value, a step function. The
batched and the alone runs add the same products in other orders (chunks, batches, ranks), so an
activation can differ in its last fp32 bits; one that lies that close to a rounding boundary rounds
to the neighbouring e4m3 value, a whole e4m3 spacing instead of 2^-24, and the next layers round
differently in turn. After 30 layers the two runs can differ by as much as two independent FP8
roundings of the same function. The tolerance bounds exactly that, from the format:

- e4m3 keeps 3 mantissa bits: in the binade [2^e, 2^(e+1)) the spacing is 2^(e-3), and rounding
  to nearest errs uniformly within half a spacing, RMS spacing / sqrt(12); relative to a value at
  the bottom of its binade (the worst case) that is U_RMS = 2^-3 / sqrt(12) = 0.036;
- a matmul rounds both operands (the weight per output channel, the activation per token):
  sqrt(2) x U_RMS on each product, and so on the dot product of independent errors;
- each residual branch has two FP8 matmuls in series (v then o; gate/up then down): sqrt(2) again;
- the residual stream adds the branches' errors in quadrature and its square is (about) the sum of
  the branches' squares, so the relative error does not grow with depth; the final norm and the LM
  head (full precision) carry it to the logits: one FP8 run is 2 x U_RMS = 0.072 from exact;
- two runs that round independently: sqrt(2) more, 0.102; and K_SIGMA = 4 standard deviations, so
  a correct run's worst row stays inside: AGREEMENT_TOL = 4 x 2 sqrt(2) x U_RMS = 0.408,

of each row's centred RMS logit difference relative to the alone run's centred RMS logit (centred:
softmax ignores a shift of a row). Measured on SmolLM2 (the main job): FP8 against fp32 is 0.11
(median row) to 0.22 (worst); batched FP8 against alone 0.07 to 0.17. What it fails: a step path
that computes another function (positions restarting each step: every row off by more than the
tolerance, tests/test_executor_fp8.py). What it cannot fail: a bug whose effect is an FP8 rounding's
size, a per-batch activation scale (0.27 at worst on SmolLM2, 0.07 on the tiny model) or a
future-token mask in FP8 (0.24): those moves are what a correct run's flips also make. A leak
between requests is caught in FP8 by isolation, bit for bit (`isolation.py`): the same plans, the
same orders, so no flip can differ. `rows_within_fp32` says how many rows saw no flip at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from stallfree.spec.verdict import Verdict

from .equivalence import EXACT_RTOL

U_RMS = 2.0**-3 / math.sqrt(12)  # e4m3's RMS rounding error, relative to the bottom of its binade
K_SIGMA = 4.0
AGREEMENT_TOL = K_SIGMA * math.sqrt(2) * math.sqrt(2) * math.sqrt(2) * U_RMS  # two runs, two operands, two in series
DERIVATION = "4 sigma x sqrt(2 runs x 2 operands x 2 matmuls in series) x e4m3 RMS rounding 2^-3/sqrt(12)"


@dataclass(frozen=True, slots=True)
class Agreement:
    dtype: str
    num_rows: int
    rows_within_fp32: int  # rows equal to the alone run within fp32 rounding: no e4m3 rounding flipped
    max_logit_diff: float
    fp32_tol: float  # the fp32 rounding tolerance those rows are within (EXACT_RTOL x the largest |logit|)
    max_rel_rms: float  # the worst row's centred RMS logit difference / the alone row's centred RMS
    median_rel_rms: float
    tolerance: float = AGREEMENT_TOL
    derivation: str = DERIVATION

    @property
    def ok(self) -> bool | None:
        return None if not self.num_rows else self.max_rel_rms <= self.tolerance

    def summary(self) -> str:
        if self.ok is None:
            return f"AGREEMENT {self.dtype:<4}   not judged: no row to compare"
        verdict = (Verdict.HOLDS if self.ok else Verdict.BROKEN).label
        return (f"AGREEMENT {self.dtype:<4}   {verdict}: against each request run alone in {self.dtype}, relative RMS "
                f"logit difference {self.median_rel_rms:.3f} (median row), {self.max_rel_rms:.3f} (worst) of "
                f"{self.num_rows} rows (tolerance {self.tolerance:.3f}: {self.derivation}); "
                f"{self.rows_within_fp32} rows equal within fp32 rounding (no e4m3 rounding flipped); "
                f"max |logit diff| {self.max_logit_diff:.3f}")


def relative_rms(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per row [positions]: the centred RMS of a - b over the centred RMS of b."""
    d = a - b
    d = d - d.mean(-1, keepdim=True)
    c = b - b.mean(-1, keepdim=True)
    return d.pow(2).mean(-1).sqrt() / c.pow(2).mean(-1).sqrt().clamp(min=1e-30)


def agreement(dtype: str, run: dict[int, torch.Tensor], alone: dict[int, torch.Tensor]) -> Agreement:
    """`run` against `alone`, both rid -> logits [positions, vocab] at the same positions."""
    a = torch.cat([run[rid] for rid in sorted(alone)]).double()
    b = torch.cat([alone[rid] for rid in sorted(alone)]).double()
    tol = EXACT_RTOL * max(1.0, float(b.abs().max()))
    rows = (a - b).abs().amax(-1)  # [positions]
    rel = relative_rms(a, b)
    return Agreement(dtype, int(a.shape[0]), int((rows <= tol).sum()), float(rows.max()), tol,
                     float(rel.max()), float(rel.median()))
