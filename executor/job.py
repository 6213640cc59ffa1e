"""A job: one workload played through one scheduler on the executor, and what came of it.

Jobs and their results are plain, picklable data: the launcher hands jobs to rank 0 in another
process and gets the results back.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from stallfree.spec import RuleViolation, Workload, work_bound

from .checks import RealPathViolation
from .executor import Executor, StepRecord

PROGRESS_EVERY_S = 1.0  # how often a long job reports progress on stderr


@dataclass(frozen=True, slots=True)
class Job:
    workload: Workload
    scheduler: str = "stallfree.reference:Scheduler"  # MODULE:FACTORY speaking the plain protocol
    monitor_rules: tuple[str, ...] | None = None  # rules the monitor checks before each plan runs (None: all)
    variant: str | None = None  # a deliberately broken executor (stallfree.executor.broken), by rule ID
    keep_logits: bool = False  # return the logits each token came from (for the equivalence check)
    temperature: float = 0.0
    prompts: tuple[tuple[int, tuple[int, ...]], ...] = ()  # (rid, token ids): real prompts; others drawn
    label: str = ""
    call_timeout: float = 60.0  # seconds for each call to a scheduler hosted in its own process (`--call-timeout`)
    stream: bool = False  # report each step to the launcher as it runs (to print tokens as they come)
    crash: tuple[int, int, str] | None = None  # (rank, batch, "raise" | "exit" | "stop" | "hang"): an injected fault
    stop_token: int | None = None  # a request that samples this token stops on it (the model's end token)
    stop_after: tuple[tuple[int, int], ...] = ()  # (rid, n): stop on its n-th token, whatever it is
    replay_ends: bool = False  # stop each request where it stopped in the job before (stop_after from it)
    cancels: tuple[tuple[int, int], ...] = ()  # (rid, step): cancel rid before step `step` is planned

    def replaying(self, before: JobResult | None) -> Job:
        """This job, its stops taken from `before` when it replays ends: each request that stopped
        there stops here on the same token index, so both runs make the same plans."""
        if not self.replay_ends or before is None:
            return self
        ends = tuple((rid, len(r.outputs)) for rid, r in sorted(before.requests.items()) if r.finish_reason == "stop")
        return replace(self, stop_token=None, stop_after=ends)


@dataclass(slots=True)
class RequestResult:
    rid: int
    prompt: list[int]
    outputs: list[int]
    arrival_step: int
    admitted_at: int
    emitted_at: list[int]
    ttft_ms: float  # from add() to the end of the step that emitted the first token
    tpot_ms: float | None  # mean time between later tokens (None for max_new == 1)
    logits: Any = None  # [max_new, vocab] float32 numpy array, when kept
    finish_reason: str = "length"  # "length" (all max_new), "stop" (its end token) or "cancel"
    cells: list[int] = field(default_factory=list)  # the KV cells it held (the last residency's, if preempted)
    num_preemptions: int = 0  # times its KV was taken back and recomputed (paged design)

    @property
    def ttft_steps(self) -> int:
        """Steps from arrival to the first token, counting the step that emits it."""
        return self.emitted_at[0] - self.arrival_step + 1

    @property
    def tpot_steps(self) -> float | None:
        if len(self.emitted_at) < 2:
            return None
        return (self.emitted_at[-1] - self.emitted_at[0]) / (len(self.emitted_at) - 1)


@dataclass(slots=True)
class JobResult:
    label: str
    steps: list[StepRecord] = field(default_factory=list)
    requests: dict[int, RequestResult] = field(default_factory=dict)
    refused: list[int] = field(default_factory=list)
    violation: tuple[str, int, str, str] | None = None  # (rule, step, message, where) of the first broken rule
    cancels: list[tuple[int, int, bool]] = field(default_factory=list)  # (rid, step, accepted) of each cancel
    design: str = "reservation"  # the scheduler's memory design (stallfree.spec.registry): its rules judged it
    cancelled_silent: list[int] = field(default_factory=list)  # cancelled before their first token

    @property
    def ok(self) -> bool:
        return self.violation is None


def drive(executor: Executor, job: Job, on_step: Callable[[StepRecord], None] | None = None,
          stopped: Callable[[BaseException], tuple[str, str] | None] | None = None) -> JobResult:
    """Play `job.workload` on `executor` until every accepted request has finished, or a rule breaks.
    `on_step` sees each step's record as soon as the step has run (to stream its tokens). `stopped`
    reads what a call into the scheduler raised (or that it did not return) as (CRASH or TIMEOUT, how),
    or None for an error of stallfree's own, which is raised on."""
    result = JobResult(job.label)
    arrivals = sorted(job.workload.requests, key=lambda a: a.arrival_step)
    arrival_step: dict[int, int] = {}
    bound = getattr(executor.monitor, "work_bound", work_bound)(job.workload)
    cancels = sorted(job.cancels, key=lambda c: c[1])
    last_report = time.perf_counter()
    try:
        i = j = 0
        while True:
            step = executor.step_index
            while i < len(arrivals) and arrivals[i].arrival_step <= step:
                a = arrivals[i]
                if executor.add(a.rid, a.prompt_len, a.max_new):
                    arrival_step[a.rid] = step
                else:
                    result.refused.append(a.rid)
                i += 1
            while j < len(cancels) and cancels[j][1] <= step:
                executor.cancel(cancels[j][0])
                j += 1
            if i == len(arrivals) and executor.monitor.is_idle:
                for rid, _ in cancels[j:]:  # nothing is left to cancel: each is refused, and recorded
                    executor.cancel(rid)
                break
            if step >= bound:
                raise RuleViolation("PROGRESS", step, f"requests pending after {step} steps; all work fits in {bound}")
            record = executor.step()
            if on_step is not None:
                on_step(record)
            if on_step is None and time.perf_counter() - last_report > PROGRESS_EVERY_S:
                last_report = time.perf_counter()
                print(f"  {job.label or 'run'}: step {step}, {len(executor.done)}/{len(executor.requests)} "
                      "requests finished", file=sys.stderr, flush=True)
        executor.check_drained()
    except RuleViolation as error:
        where = "real path" if isinstance(error, RealPathViolation) else "monitor"
        result.violation = (error.rule, error.step, error.message, where)
    except BaseException as error:  # the scheduler's crash or hang: no rule judged it, the run stops there
        verdict = stopped(error) if stopped is not None else None
        if verdict is None:
            raise
        result.violation = (verdict[0], executor.step_index, verdict[1], "scheduler")
    result.steps = executor.records
    result.cancels = executor.cancels
    result.cancelled_silent = sorted(executor.cancelled_waiting)
    for rid, s in executor.done.items():
        if not s.times:  # cancelled after admission, before its first token: nothing to time
            result.cancelled_silent.append(rid)
            continue
        ttft = s.times[0] - executor.added_at[rid]
        tpot = (s.times[-1] - s.times[0]) / (len(s.times) - 1) if len(s.times) > 1 else None
        result.requests[rid] = RequestResult(
            rid, s.prompt, s.outputs, arrival_step[rid], s.admitted_at, s.emitted_at, ttft * 1e3,
            None if tpot is None else tpot * 1e3, _stack(s.logits) if s.logits else None,
            s.finish_reason or "length", list(s.cells), s.num_preemptions,
        )
    return result


def _stack(rows: list[Any]) -> Any:
    import torch

    # numpy, not a tensor: torch pickles tensors across processes as shared memory that vanishes
    # when the rank process exits; an array travels by value.
    return torch.stack(rows).numpy()
