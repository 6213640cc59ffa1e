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

from stallfree.spec import Cancel, RuleViolation, Workload, registry
from stallfree.spec.contract import Contract
from stallfree.spec.play import Player, Stepped, stalled

from .checks import RealPathViolation
from .executor import Executor, StepRecord

PROGRESS_EVERY_S = 1.0  # how often a long job reports progress on stderr


@dataclass(frozen=True, slots=True)
class Job:
    workload: Workload
    scheduler: str = "stallfree.reference:Scheduler"  # MODULE:FACTORY speaking the plain protocol
    monitor_rules: tuple[str, ...] | None = None  # rules the monitor checks before each plan runs (None: all)
    variant: str | None = None  # a deliberately broken executor (stallfree.executor.engine.broken), by rule ID
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
    cancels: tuple[Cancel, ...] = ()  # cancel(rid) before step `step` is planned (none while a plan is pending)

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
    num_cached: int = 0  # prefill positions it took from cached blocks (prefix design)

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


class Stepping:
    """The executor as the run loop's engine (`stallfree.spec.play.Engine`): each step a forward pass.
    Keeps what the result needs: the step each accepted rid was added on, and the refused rids."""

    def __init__(self, executor: Executor, label: str, on_step: Callable[[StepRecord], None] | None) -> None:
        self.executor, self.label, self.on_step = executor, label, on_step
        self.monitor = executor.monitor
        self.arrival_step: dict[int, int] = {}
        self.refused: list[int] = []
        self.last_report = time.perf_counter()

    def add(self, rid: Any, prompt_len: Any, max_new: Any, *extra: Any) -> bool:
        step = self.executor.step_index
        accepted = self.executor.add(rid, prompt_len, max_new, *extra)
        if accepted:
            self.arrival_step[rid] = step
        else:
            self.refused.append(rid)
        return accepted

    def cancel(self, rid: Any) -> bool:
        return self.executor.cancel(rid)

    def step(self) -> Stepped:
        executor = self.executor
        record = executor.step()
        if self.on_step is not None:
            self.on_step(record)
        elif time.perf_counter() - self.last_report > PROGRESS_EVERY_S:
            self.last_report = time.perf_counter()
            print(f"  {self.label or 'run'}: step {record.step}, {len(executor.done)}/{len(executor.requests)} "
                  "requests finished", file=sys.stderr, flush=True)
        stopped = [rid for rid in record.finished if executor.done[rid].finish_reason == "stop"]
        return Done(record.num_tokens, record.finished, stopped)


@dataclass(slots=True)
class Done:
    """What an executor step did, as the run loop counts it."""

    num_tokens: int
    finished: list[int]
    stopped: list[int]


def drive(executor: Executor, job: Job, on_step: Callable[[StepRecord], None] | None = None,
          contract: Contract | None = None,
          stopped: Callable[[BaseException], tuple[str, str] | None] | None = None) -> JobResult:
    """Play `job.workload` (its own cancels and `job.cancels`) on `executor` until every accepted request has
    finished, or a rule breaks: the run loop of `stallfree.spec.play`, each step a forward pass.
    `on_step` sees each step's record as soon as the step has run (to stream its tokens); `contract`
    is the scheduler's design (its work bound; the one its scheduler declares when None). `stopped`
    reads what a call into the scheduler raised (or that it did not return) as (CRASH or TIMEOUT, how),
    or None for an error of stallfree's own, which is raised on."""
    result = JobResult(job.label)
    stepping = Stepping(executor, job.label, on_step)
    contract = contract or registry.of(executor.monitor.scheduler)
    workload = replace(job.workload, cancels=job.workload.cancels + job.cancels)  # its own, then the job's
    player = Player(workload, None, contract=contract, engine=stepping)
    try:
        stats = player.play()
        if stats.stopped_at_bound is not None:  # the monitor does not judge PROGRESS; a run must end
            raise stalled(executor.monitor, stats.stopped_at_bound)
        executor.check_drained()
    except RuleViolation as error:
        where = "real path" if isinstance(error, RealPathViolation) else "monitor"
        result.violation = (error.rule, error.step, error.message, where)
    except BaseException as error:  # the scheduler's crash or hang: no rule judged it, the run stops there
        verdict = stopped(error) if stopped is not None else None
        if verdict is None:
            raise
        result.violation = (verdict[0], executor.step_index, verdict[1], "scheduler")
    result.refused = stepping.refused
    arrival_step = stepping.arrival_step
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
            s.finish_reason or "length", list(s.cells), s.num_preemptions, s.num_cached,
        )
    return result


def _stack(rows: list[Any]) -> Any:
    import torch

    # numpy, not a tensor: torch pickles tensors across processes as shared memory that vanishes
    # when the rank process exits; an array travels by value.
    return torch.stack(rows).numpy()
