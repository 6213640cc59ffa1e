"""bf16 and fp8 against fp32: measurements, not a pass/fail. Rounding weights and activations to 8
or 3 bits of mantissa moves logits by amounts that depend on the model, not on a bug, so these
figures are reported for what they are: how often the top token agrees with fp32's, how far the
distributions are apart (KL divergence of the dtype's softmax from fp32's), and the largest logit
error, all on the same teacher-forced sequences."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..engine.job import JobResult
from ..runs.runspec import RunSpec
from .equivalence import reference_logits, reference_model


@dataclass(frozen=True, slots=True)
class Accuracy:
    dtype: str
    num_tokens: int
    top1_agree: int  # positions whose argmax equals fp32's
    mean_kl: float  # KL(fp32 || dtype) in nats, mean over positions
    max_kl: float
    max_logit_err: float

    def summary(self) -> str:
        return (f"ACCURACY {self.dtype:<5}  measured: top-1 agrees with fp32 at {self.top1_agree}/{self.num_tokens} "
                f"positions; KL mean {self.mean_kl:.2e}, max {self.max_kl:.2e} nats; max |logit err| "
                f"{self.max_logit_err:.3f}")


def measure(dtype: str, logits: dict[int, torch.Tensor], fp32: dict[int, torch.Tensor]) -> Accuracy:
    """`logits` against `fp32`, both rid -> [positions, vocab] at the same positions."""
    a = torch.cat([logits[rid] for rid in sorted(fp32)]).double()
    b = torch.cat([fp32[rid] for rid in sorted(fp32)]).double()
    kl = (b.softmax(-1) * (b.log_softmax(-1) - a.log_softmax(-1))).sum(-1)  # [positions]
    return Accuracy(dtype, int(a.shape[0]), int((a.argmax(-1) == b.argmax(-1)).sum()), float(kl.mean()),
                    float(kl.max()), float((a - b).abs().max()))


def dtype_accuracy(spec: RunSpec, result: JobResult, fp32: dict[int, torch.Tensor],
                   dtypes: tuple[str, ...] = ("bf16", "fp8")) -> list[Accuracy]:
    """Each of `dtypes` on one rank, dense, on the run's sequences, against the fp32 reference."""
    return [measure(d, reference_logits(reference_model(spec, d), result), fp32) for d in dtypes]
