"""Request isolation: changing one request's prompt never changes another request's logits in the
same steps. Two jobs run the same workload under the same scheduler (so the same plans: a plan
depends on lengths, never on token ids, and the second job replays the first's stops:
`Job.replay_ends`); in the second, one prompt token of one request differs.
Every other request's logits must be bit-for-bit those of the first run, in fp32: each row of a
matmul, each request's attention, each element of an all-reduce is computed from that request's
numbers alone. An executor that lets one request read another's KV memory breaks it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..engine.job import Job, JobResult
from ..engine.stream import prompt_tokens


def perturbed(job: Job, rid: int, seed: int, vocab: int) -> Job:
    """`job` with one token of `rid`'s prompt (the middle one) replaced by the next token id."""
    arrival = next((a for a in job.workload.requests if a.rid == rid), None)
    if arrival is None:
        raise ValueError(f"rid {rid} is not in the workload")
    prompts = dict(job.prompts)
    tokens = list(prompts.get(rid) or prompt_tokens(seed, rid, arrival.prompt_len, vocab))
    middle = len(tokens) // 2
    tokens[middle] = (tokens[middle] + 1) % vocab
    prompts[rid] = tuple(tokens)
    return replace(job, prompts=tuple(sorted(prompts.items())), label=f"{job.label} (rid {rid} perturbed)")


@dataclass(slots=True)
class Isolation:
    rid: int  # the request whose prompt was changed
    num_requests: int = 0  # the other requests compared
    num_rows: int = 0  # their logit rows compared
    changed: list[int] = field(default_factory=list)  # other requests whose logits moved
    max_diff: float = 0.0
    perturbed_moved: bool = False  # the changed request's own logits moved (the change took effect)

    @property
    def judged(self) -> bool:
        """Something was compared: the change took effect and other requests ran beside it."""
        return self.perturbed_moved and self.num_requests > 0

    @property
    def ok(self) -> bool | None:
        """True: isolation holds; False: it broke; None: not judged."""
        return None if not self.judged else not self.changed

    def summary(self) -> str:
        if not self.perturbed_moved:
            return f"ISOLATION        not judged: changing rid {self.rid}'s prompt did not move its own logits"
        if not self.num_requests:
            return f"ISOLATION        not judged: rid {self.rid} ran alone (no other request to compare)"
        if self.ok:
            return (f"ISOLATION        holds: changing one prompt token of rid {self.rid} left the logits of the "
                    f"other {self.num_requests} requests ({self.num_rows} rows) bit-for-bit equal")
        return (f"ISOLATION        BROKEN: changing one prompt token of rid {self.rid} changed the logits of "
                f"rid(s) {self.changed[:5]} (max |diff| {self.max_diff:.2e})")


def isolation(base: JobResult, changed: JobResult, rid: int) -> Isolation:
    """Compare the two runs' kept logits request by request (exact equality)."""
    import numpy as np

    report = Isolation(rid)
    for other, r in sorted(base.requests.items()):
        a, b = r.logits, changed.requests[other].logits
        if a is None or b is None:
            raise ValueError(f"rid {other} has no logits: run both jobs with keep_logits=True")
        equal = a.shape == b.shape and bool(np.array_equal(a, b))
        if other == rid:
            report.perturbed_moved = not equal
            continue
        report.num_requests += 1
        report.num_rows += a.shape[0]
        if not equal:
            report.changed.append(other)
            if a.shape == b.shape:
                report.max_diff = max(report.max_diff, float(np.abs(a - b).max()))
    return report
