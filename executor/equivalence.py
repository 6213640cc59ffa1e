"""Equivalence: each request's tokens under continuous batching (chunked, batched, tensor-parallel)
against an unbatched, unchunked run of the same request with the same weights on one rank.

The reference runs the whole sequence (prompt, then the batched run's outputs) in one dense causal
pass with no KV cache, and reads the logits at every position that emitted a token. Feeding the
batched outputs back (teacher forcing) is what lets every token be judged: with greedy sampling, a
causal model's one-pass logits are exactly those of prompt-then-decode generation as long as the
tokens agree, and where two logits are nearly tied one divergence would otherwise hide all later
tokens.

Near ties are counted, not hidden: a token differing from the reference's argmax passes only when
the reference itself ranks the two within `tie_tol`, and each such case is listed in the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch

from stallfree.spec.verdict import Verdict

from .group import Group
from .job import JobResult
from .model import Transformer
from .runspec import RunSpec

# Largest |logit difference| allowed between the batched run and the reference, by weight dtype.
# Logits here have a standard deviation near 1. fp32 differs only by summation order; bf16 rounds
# activations to 8 bits of mantissa; fp8 quantizes each matmul's activations per token, and with
# tensor parallelism each rank scales its own slice of a row-parallel input, so the rounding (not
# the weights) differs from one rank's. Measured maxima are in docs/executor.md.
LOGIT_TOL = {"fp32": 1e-3, "bf16": 0.25, "fp8": 0.25}


@dataclass(slots=True)
class NearTie:
    rid: int
    index: int  # which output token
    token: int  # the batched run's token
    reference: int  # the reference's argmax
    margin: float  # reference logit of its argmax minus that of the batched token


@dataclass(slots=True)
class Equivalence:
    num_requests: int = 0
    num_tokens: int = 0
    num_equal: int = 0
    max_logit_diff: float = 0.0
    logit_tol: float = 0.0
    near_ties: list[NearTie] = field(default_factory=list)
    mismatches: list[NearTie] = field(default_factory=list)  # differ by more than a near tie

    @property
    def ok(self) -> bool:
        return not self.mismatches and self.max_logit_diff <= self.logit_tol

    def summary(self) -> str:
        verdict = (Verdict.HOLDS if self.ok else Verdict.BROKEN).label
        text = (
            f"EQUIVALENCE      {verdict}: {self.num_equal}/{self.num_tokens} tokens of {self.num_requests} "
            f"requests equal the unbatched one-rank run; max |logit diff| {self.max_logit_diff:.2e} "
            f"(tolerance {self.logit_tol:g}); {len(self.near_ties)} near tie(s)"
        )
        for t in self.near_ties[:5]:
            text += f"\n  near tie: rid {t.rid} token {t.index}: {t.token} vs {t.reference}, margin {t.margin:.2e}"
        for t in self.mismatches[:5]:
            text += f"\n  MISMATCH: rid {t.rid} token {t.index}: {t.token} vs {t.reference}, margin {t.margin:.2e}"
        return text


def reference_model(spec: RunSpec) -> Transformer:
    """The same weights on one rank (world size 1), on the CPU."""
    return replace(spec, tp=1, device="cpu").build(Group())


def compare(spec: RunSpec, result: JobResult, model: Transformer | None = None,
            logit_tol: float | None = None) -> Equivalence:
    """Judge every request of `result` (run with keep_logits) against the one-rank dense reference."""
    model = reference_model(spec) if model is None else model
    tol = LOGIT_TOL[spec.dtype] if logit_tol is None else logit_tol
    report = Equivalence(logit_tol=tol)
    for rid, r in sorted(result.requests.items()):
        if r.logits is None:
            raise ValueError(f"rid {rid} has no logits: run the job with keep_logits=True")
        sequence = torch.tensor(r.prompt + r.outputs[:-1], dtype=torch.int64)
        reference = model.dense(sequence)[len(r.prompt) - 1:]  # [max_new, vocab]
        batched = torch.from_numpy(r.logits)
        report.num_requests += 1
        report.max_logit_diff = max(report.max_logit_diff, float((batched - reference).abs().max()))
        for i, token in enumerate(r.outputs):
            best = int(reference[i].argmax())
            report.num_tokens += 1
            if best == token:
                report.num_equal += 1
                continue
            margin = float(reference[i, best] - reference[i, token])
            (report.near_ties if margin <= tol else report.mismatches).append(NearTie(rid, i, token, best, margin))
    return report
