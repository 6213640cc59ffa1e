"""Two runs of one workload compared request by request (the recompute and cache-hit checks): each
request's tokens must be equal, and the logits they came from equal within fp32 rounding
(`equivalence.EXACT_RTOL` of the reference run's largest |logit|)."""

from __future__ import annotations

import numpy as np

from stallfree.spec.verdict import Verdict

from ..engine.job import JobResult, RequestResult
from .equivalence import EXACT_RTOL


def logit_tol(reference: JobResult) -> float:
    """EXACT_RTOL of the largest |logit| of `reference` (at least 1)."""
    scale = max((float(np.abs(r.logits).max()) for r in reference.requests.values() if r.logits is not None),
                default=1.0)
    return EXACT_RTOL * max(1.0, scale)


def differs(r: RequestResult, other: RequestResult, what: str, tol: float) -> tuple[str | None, float]:
    """Why `r` differs from `other` (None where it does not; `what` describes `r`), and the max |logit
    diff| (0.0 where the tokens differ). Both runs must have kept their logits."""
    if r.outputs != other.outputs:
        i = next((i for i, (a, b) in enumerate(zip(r.outputs, other.outputs, strict=False)) if a != b),
                 min(len(r.outputs), len(other.outputs)))
        return (f"rid {r.rid} ({what}) differs from output {i} on: {r.outputs[i:i + 3]} against "
                f"{other.outputs[i:i + 3]}"), 0.0
    if r.logits is None or other.logits is None:
        raise ValueError(f"rid {r.rid} has no logits: run both jobs with keep_logits=True")
    diff = float(np.abs(r.logits - other.logits).max()) if len(r.outputs) else 0.0
    if diff > tol:
        return f"rid {r.rid}: logits differ by {diff:.2e}, past the tolerance {tol:.2e}", diff
    return None, diff


def verdict_line(rule: str, ok: bool | None, body: str, differ: list[str]) -> str:
    """`rule`'s line (holds or broken: `body`), and the first five requests that differ."""
    return f"{rule:<16} {(Verdict.HOLDS if ok else Verdict.BROKEN).label}: {body}" + "".join(
        f"\n  DIFFERS: {why}" for why in differ[:5])
