"""Exactness: each request's tokens and logits under continuous batching (chunked, batched,
tensor-parallel) against an unbatched, unchunked run of the same request with the same weights on
one rank, in fp32.

The reference runs the whole sequence (prompt, then the batched run's outputs) in one dense causal
pass with no KV cache, and reads the logits at every position that emitted a token. Feeding the
batched outputs back (teacher forcing) is what lets every token be judged: a causal model's one-pass
logits are exactly those of prompt-then-decode generation as long as the tokens agree, and one
divergence would otherwise hide all later tokens. Sampled tokens are replayed: the reference adds
the same seeded noise to its own logits (see sampler.py), so `--temperature > 0` is judged too.

The tolerance comes from fp32 rounding, not from the gaps between logits: the two runs add the same
products in other orders (chunks, batches, ranks), which in fp32 (24-bit mantissa) moves a logit by
a few millionths of the logits' scale; EXACT_RTOL allows 1e-5 of the largest |logit|. A bug (a mask
that sees a future token, a read of another request's memory) moves logits by orders of magnitude
more. A token that differs passes only as a near tie: the reference's own top two scores within
twice the tolerance; near ties are listed, never hidden. bf16 and fp8 are judged elsewhere, as
measurements (`accuracy.py`): their rounding is not a bug.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch

from stallfree.spec.verdict import Verdict

from ..engine.job import JobResult
from ..layers.group import Group
from ..layers.sampler import Sampler
from ..models.model import Transformer
from ..runs.runspec import RunSpec

EXACT_RTOL = 1e-5  # allowed |logit difference| in fp32, relative to the largest |logit| (at least 1)


@dataclass(slots=True)
class Divergence:
    rid: int
    index: int  # which output token
    token: int  # the batched run's token
    reference: int  # the reference's token (its argmax, or its replayed draw)
    margin: float  # the reference's score of its token minus that of the batched token, in logits


@dataclass(slots=True)
class Exactness:
    num_requests: int = 0
    num_tokens: int = 0
    num_equal: int = 0
    max_logit_diff: float = 0.0
    logit_tol: float = 0.0
    near_ties: list[Divergence] = field(default_factory=list)
    mismatches: list[Divergence] = field(default_factory=list)  # differ by more than a near tie
    stop_token: int | None = None  # the end token the run stopped on, when it stopped on one
    num_stops: int = 0  # requests that ended on the end token, where the reference also samples it
    wrong_ends: list[str] = field(default_factory=list)  # requests whose end is not where the reference's is

    @property
    def ok(self) -> bool | None:
        """True: exact; False: broken; None: not judged (no token was emitted)."""
        if not self.num_tokens:
            return None
        return not self.mismatches and not self.wrong_ends and self.max_logit_diff <= self.logit_tol

    def summary(self) -> str:
        if self.ok is None:
            return "EXACTNESS        not judged: no request emitted a token"
        verdict = (Verdict.HOLDS if self.ok else Verdict.BROKEN).label
        text = (
            f"EXACTNESS        {verdict}: {self.num_equal}/{self.num_tokens} tokens of {self.num_requests} "
            f"requests equal the unbatched one-rank fp32 run; max |logit diff| {self.max_logit_diff:.2e} "
            f"(tolerance {self.logit_tol:.2e}, fp32 rounding); {len(self.near_ties)} near tie(s)"
        )
        if self.stop_token is not None:
            text += (f"; {self.num_stops} request(s) stopped on end token {self.stop_token}, each where the "
                     "reference samples it, none past it")
        for why in self.wrong_ends[:5]:
            text += f"\n  WRONG END: {why}"
        for t in self.near_ties[:5]:
            text += f"\n  near tie: rid {t.rid} token {t.index}: {t.token} vs {t.reference}, margin {t.margin:.2e}"
        for t in self.mismatches[:5]:
            text += f"\n  MISMATCH: rid {t.rid} token {t.index}: {t.token} vs {t.reference}, margin {t.margin:.2e}"
        return text


def reference_model(spec: RunSpec, dtype: str = "fp32") -> Transformer:
    """The same weights on one rank (world size 1), on the CPU, in `dtype`."""
    return replace(spec, tp=1, device="cpu", dtype=dtype).build(Group())


def reference_logits(model: Transformer, result: JobResult) -> dict[int, torch.Tensor]:
    """rid -> the reference's logits [max_new, vocab] at every position that emitted a token,
    the sequence teacher-forced with the run's own outputs."""
    logits = {}
    for rid, r in sorted(result.requests.items()):
        sequence = torch.tensor(r.prompt + r.outputs[:-1], dtype=torch.int64)
        logits[rid] = model.dense(sequence)[len(r.prompt) - 1:]
    return logits


def run_logits(result: JobResult) -> dict[int, torch.Tensor]:
    """rid -> the logits [max_new, vocab] each of the run's tokens came from (kept by the run)."""
    missing = [rid for rid, r in result.requests.items() if r.logits is None]
    if missing:
        raise ValueError(f"rid(s) {missing[:5]} have no logits: run the job with keep_logits=True")
    return {rid: torch.from_numpy(r.logits) for rid, r in sorted(result.requests.items())}


def compare(spec: RunSpec, result: JobResult, model: Transformer | None = None, logit_tol: float | None = None,
            sampler: Sampler | None = None, reference: dict[int, torch.Tensor] | None = None,
            stop_token: int | None = None) -> Exactness:
    """Judge every request of `result` (an fp32 run, kept logits) against the one-rank dense reference.
    `sampler`: the run's (its temperature and seed); greedy by default. With `stop_token`, the run
    is compared like with like: the reference's tokens are the run's (so it samples the end token
    where the run did), and each request must end exactly there: stopped on its first end token,
    never emitting one before, never stopped without one (a request cancelled or at max_new ends
    for its own reason)."""
    sampler = Sampler(0.0, spec.seed) if sampler is None else sampler
    if reference is None:
        reference = reference_logits(reference_model(spec) if model is None else model, result)
    batched = run_logits(result)
    scale = max((float(r.abs().max()) for r in reference.values()), default=1.0)
    report = Exactness(logit_tol=EXACT_RTOL * max(1.0, scale) if logit_tol is None else logit_tol)
    unit = sampler.temperature or 1.0  # scores are logits / T: a margin in scores times T is in logits
    report.stop_token = stop_token
    for rid, r in sorted(result.requests.items()):
        report.num_requests += 1
        if stop_token is not None:
            judge_end(report, rid, r.outputs, r.finish_reason, stop_token)
        report.max_logit_diff = max(report.max_logit_diff, float((batched[rid] - reference[rid]).abs().max()))
        for i, token in enumerate(r.outputs):
            scores = sampler.scores(reference[rid][i], rid, i)
            best = int(scores.argmax())
            report.num_tokens += 1
            if best == token:
                report.num_equal += 1
                continue
            margin = float(scores[best] - scores[token]) * unit
            near = margin <= 2 * report.logit_tol
            (report.near_ties if near else report.mismatches).append(Divergence(rid, i, token, best, margin))
    return report


def judge_end(report: Exactness, rid: int, outputs: list[int], finish_reason: str, stop_token: int) -> None:
    """A request under a stop token ends on its first end token and nowhere else."""
    first = outputs.index(stop_token) if stop_token in outputs else None
    if first is not None and first < len(outputs) - 1:
        report.wrong_ends.append(f"rid {rid} sampled the end token at output {first} and went on to "
                                 f"{len(outputs)} tokens")
    elif finish_reason == "stop" and first is None:
        report.wrong_ends.append(f"rid {rid} stopped at output {len(outputs) - 1} without the end token")
    elif first is not None and finish_reason != "stop":
        report.wrong_ends.append(f"rid {rid} sampled the end token last but ended by {finish_reason}")
    elif first is not None:
        report.num_stops += 1
