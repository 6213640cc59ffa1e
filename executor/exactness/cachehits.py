"""Cache-hit exactness on the real model (prefix-caching design, rule HIT-SAME-TOKENS on the real
path): a request whose leading blocks came from the cache emits exactly the tokens it emits without
the cache.

Two runs of the same workload (same prompts, same weights): one under the prefix-caching design,
one under a design without a cache (the paged one). In fp32 every request's tokens must be equal,
and the logits they came from equal within fp32 rounding: the cached blocks' keys and values were
computed in another request's chunk, in other batches, so the same products are summed in other
orders (`twins.logit_tol`: `equivalence.EXACT_RTOL`, 1e-5 of the largest |logit|). A hit that served a block computed
for other tokens moves the logits of every later token by far more.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.job import JobResult
from .twins import differs, logit_tol, verdict_line


@dataclass(slots=True)
class CacheHits:
    num_hit: int = 0  # requests that took at least one block from the cache
    num_cached: int = 0  # prompt positions served from cached blocks, in all
    num_prompt: int = 0  # prompt tokens of the compared requests
    num_requests: int = 0
    num_tokens: int = 0
    max_logit_diff: float = 0.0  # over the hit requests' tokens
    logit_tol: float = 0.0
    differ: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool | None:
        """True: exact; False: broken; None: not judged (no request took a block from the cache)."""
        return None if not self.num_cached else not self.differ

    def summary(self) -> str:
        if not self.num_cached:
            return "HIT-SAME-TOKENS  not judged: no request took a block from the cache (share a longer prefix)"
        return verdict_line("HIT-SAME-TOKENS", self.ok, f"{self.num_hit} request(s) took {self.num_cached} prefill "
                            f"tokens from cached blocks (prompts of {self.num_prompt} tokens in all) and emit the "
                            f"{self.num_tokens} tokens of {self.num_requests} requests of the run without the cache; "
                            f"max |logit diff| of the hits {self.max_logit_diff:.2e} (tolerance {self.logit_tol:.2e})",
                            self.differ)


def hit_exactness(cached: JobResult, uncached: JobResult) -> CacheHits:
    """Compare the two runs request by request (both with kept logits)."""
    report = CacheHits(logit_tol=logit_tol(uncached))
    for rid, r in sorted(cached.requests.items()):
        other = uncached.requests.get(rid)
        if other is None:
            report.differ.append(f"rid {rid} did not run without the cache")
            continue
        if other.num_cached:
            report.differ.append(f"rid {rid} took blocks from a cache in the run that must have none")
        report.num_requests += 1
        report.num_tokens += len(r.outputs)
        report.num_prompt += len(r.prompt)
        if r.num_cached:
            report.num_hit += 1
            report.num_cached += r.num_cached
        why, diff = differs(r, other, f"{r.num_cached} cached tokens", report.logit_tol)
        if why is not None:
            report.differ.append(why)
        if r.num_cached:
            report.max_logit_diff = max(report.max_logit_diff, diff)
    return report
