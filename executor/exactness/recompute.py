"""Recompute exactness on the real model (paged design): a request whose KV was taken back by a
preemption and recomputed emits exactly the tokens it would have emitted unpreempted.

Two runs of the same workload on the same weights: one on a pool small enough that the scheduler
preempts, one on a pool large enough that it never does. In fp32 every request's tokens must be
equal, and the logits they came from equal within fp32 rounding (the recompute prefills in chunks
what the other run computed one decode at a time: the same products, summed in other orders, as
in the exactness check). A recompute that lost or altered one emitted token's KV moves the
logits of every later token by far more.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.job import JobResult
from .twins import differs, logit_tol, verdict_line


@dataclass(slots=True)
class Recompute:
    num_preempted: int = 0  # requests preempted at least once in the small-pool run
    num_preemptions: int = 0
    num_requests: int = 0  # requests compared
    num_tokens: int = 0
    max_logit_diff: float = 0.0  # over the preempted requests' tokens
    logit_tol: float = 0.0
    differ: list[str] = field(default_factory=list)  # requests whose tokens or logits differ

    @property
    def ok(self) -> bool | None:
        """True: exact; False: broken; None: not judged (nothing was preempted)."""
        return None if not self.num_preempted else not self.differ

    def summary(self) -> str:
        if not self.num_preempted:
            return "RECOMPUTE        not judged: nothing was preempted (a smaller --kv makes the pool preempt)"
        return verdict_line("RECOMPUTE", self.ok, f"{self.num_preempted} request(s) preempted {self.num_preemptions} "
                            f"time(s) and recomputed emit the {self.num_tokens} tokens of {self.num_requests} requests "
                            f"of the unpreempted run; max |logit diff| of the preempted {self.max_logit_diff:.2e} "
                            f"(tolerance {self.logit_tol:.2e})", self.differ)


def recompute_exactness(preempted: JobResult, unpreempted: JobResult) -> Recompute:
    """Compare the two runs request by request (kept logits)."""
    report = Recompute(logit_tol=logit_tol(unpreempted))
    for rid, r in sorted(preempted.requests.items()):
        other = unpreempted.requests.get(rid)
        if other is None:
            report.differ.append(f"rid {rid} did not run unpreempted")
            continue
        report.num_requests += 1
        report.num_tokens += len(r.outputs)
        if r.num_preemptions:
            report.num_preempted += 1
            report.num_preemptions += r.num_preemptions
        if other.num_preemptions:
            report.differ.append(f"rid {rid} was preempted in the run that must not preempt")
        why, diff = differs(r, other, f"preempted {r.num_preemptions}x", report.logit_tol)
        if why is not None:
            report.differ.append(why)
        if r.num_preemptions:
            report.max_logit_diff = max(report.max_logit_diff, diff)
    return report
