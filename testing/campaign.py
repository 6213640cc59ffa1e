"""Campaigns: many randomized simulations of a scheduler under the monitor, spread over processes.

Simulation `i` of a campaign with seed `S` plays `random_workload(Random(f"{S}:{i}"))`, so it is the
same workload whatever the number of jobs, and a violation names the seed and index that replay it
(and prints the workload itself as JSON, for `stallfree trace --workload FILE`).

Standard library only: `multiprocessing` for the jobs, `random` for the workloads.
"""

from __future__ import annotations

import multiprocessing
import random
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from stallfree.spec import registry
from stallfree.spec.errors import RuleViolation
from stallfree.spec.play import play
from stallfree.spec.verdict import CRASH, TIMEOUT
from stallfree.spec.workload import Workload

from .generate import LIFECYCLE, Ranges, random_workload

CRASHED = CRASH  # Violation.rule when a call raised, or a worker died, instead of answering (no rule judged it)

BATCH = 50  # simulations a worker runs per task: large enough to amortise the hand-off, small enough for progress


@dataclass(frozen=True, slots=True)
class Violation:
    """The first broken rule a campaign found (or CRASHED: the scheduler raised), with what replays it."""

    sim: int
    rule: str
    step: int | None  # None: no step judged it (a crash)
    message: str
    workload: str  # JSON: Workload.dumps()


@dataclass(slots=True)
class Tally:
    """What a batch of simulations (or a whole campaign) did."""

    sims: int = 0
    requests: int = 0  # add() calls offered, refused ones included
    refused: int = 0
    steps: int = 0
    busy_steps: int = 0
    tokens: int = 0
    stops: int = 0
    cancels: int = 0  # cancel() calls, accepted and refused
    checks: int = 0  # rule predicates evaluated (step checks, add and cancel checks)
    cpu_seconds: float = 0.0  # CPU time of the simulations, summed over workers: steps/cpu_seconds is
    # the rate of one core, whatever else shares the machine
    violation: Violation | None = None

    def merge(self, other: Tally) -> None:
        self.sims += other.sims
        self.requests += other.requests
        self.refused += other.refused
        self.steps += other.steps
        self.busy_steps += other.busy_steps
        self.tokens += other.tokens
        self.stops += other.stops
        self.cancels += other.cancels
        self.checks += other.checks
        self.cpu_seconds += other.cpu_seconds
        if other.violation is not None and (self.violation is None or other.violation.sim < self.violation.sim):
            self.violation = other.violation


@dataclass(frozen=True, slots=True)
class Campaign:
    """What to run: `sims` simulations from `seed`, of `factory` (plain protocol), checking `rules`.
    With `lifecycle`, the workloads also stop requests early and cancel them (the scheduler must
    support both: `stallfree.spec.capability`)."""

    sims: int
    seed: int
    factory: Callable[..., Any]
    rules: tuple[str, ...] | None = None
    jobs: int = 1
    batch_timeout: float | None = None  # seconds a worker may take for one batch; None: no limit
    lifecycle: bool = False

    @property
    def checks_per_step(self) -> int:
        """Rule predicates that judge each step (a rule may judge the plan and the step done)."""
        chosen = registry.of(self.factory).select(self.rules)
        return sum((r.plan_check is not None) + (r.done_check is not None) for r in chosen)

    def workload(self, sim: int) -> Workload:
        return random_workload(random.Random(f"{self.seed}:{sim}"), LIFECYCLE if self.lifecycle else Ranges())


@dataclass(slots=True)
class CampaignStatus:
    """The status of a running campaign, as `run` reports it after each batch."""

    done: Tally
    total_sims: int
    started: float = field(default_factory=time.perf_counter)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started


def run_batch(campaign: Campaign, first: int, last: int) -> Tally:
    """Simulations [first, last) of `campaign`; stops at the first violation."""
    tally = Tally()
    started = time.process_time()
    for sim in range(first, last):
        workload = campaign.workload(sim)
        try:
            stats = play(workload, campaign.factory, campaign.rules)
        except RuleViolation as error:
            tally.violation = Violation(sim, error.rule, error.step, error.message, workload.dumps())
            break
        except Exception as error:  # something raised instead of answering: stop there, with the workload
            message = f"{type(error).__name__}: {error} (raised at {where_raised(error)})"
            tally.violation = Violation(sim, CRASHED, None, message, workload.dumps())
            break
        tally.sims += 1
        tally.requests += stats.accepted + stats.refused
        tally.refused += stats.refused
        tally.steps += stats.steps
        tally.busy_steps += stats.busy_steps
        tally.tokens += stats.tokens
        tally.stops += stats.stopped
        tally.cancels += stats.cancelled + stats.cancels_refused
        tally.checks += stats.checks
    tally.cpu_seconds = time.process_time() - started
    return tally


def where_raised(error: BaseException) -> str:
    """File, line and function where `error` was raised: the scheduler's code, or else the core's."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "an unknown place"
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"


def _run_task(task: tuple[Campaign, int, int]) -> Tally:
    return run_batch(*task)


def batches(campaign: Campaign) -> Iterator[tuple[Campaign, int, int]]:
    for first in range(0, campaign.sims, BATCH):
        yield campaign, first, min(first + BATCH, campaign.sims)


def run(
    campaign: Campaign, on_progress: Callable[[CampaignStatus], None] | None = None, isolate: bool = False,
) -> Tally:
    """Run `campaign` on `campaign.jobs` processes (never more than it has batches); batches are merged
    in simulation order, and the campaign stops at the first batch that found a violation (the lowest
    simulation index among the batches done). One job runs in this process unless `isolate`: then a
    scheduler that ends its process (os._exit) is reported as a crash rather than ending the caller."""
    progress = CampaignStatus(Tally(), campaign.sims)
    jobs = min(campaign.jobs, -(-campaign.sims // BATCH))
    if jobs <= 1 and not isolate:
        results: Iterator[Tally] = map(_run_task, batches(campaign))
        return collect(results, progress, on_progress)
    # A worker that dies (os._exit, a signal, the OOM killer) breaks the pool, which then fails every
    # batch still due instead of waiting for it forever; the first such batch is reported as a crash.
    pool = ProcessPoolExecutor(max(jobs, 1), mp_context=multiprocessing.get_context(_start_method()),
                               initializer=_ignore_interrupts)
    futures: list = []  # type: ignore[type-arg]
    try:
        tasks = list(batches(campaign))
        with interrupts_held():  # the workers are forked here: they must never see a Ctrl-C as their own
            futures = [pool.submit(_run_task, task) for task in tasks]
        tally = collect(_results(futures, tasks), progress, on_progress)
    finally:
        for future in futures:
            future.cancel()
        for process in list(getattr(pool, "_processes", {}).values()):  # stop batches still running
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
    return tally


def _ignore_interrupts() -> None:
    """A worker's first act: Ctrl-C (SIGINT to the whole process group) is the parent's to handle; it
    then stops the workers itself, so a worker neither prints a traceback nor dies a crash. SIGTERM,
    which the parent stops it with, ends it at once (the parent's own handler, inherited, would raise)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold a Ctrl-C back while workers are forked, then raise it here: a worker forked in between
    inherits the holding handler, which raises nothing, until its initializer ignores SIGINT."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: held.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if held:
        raise KeyboardInterrupt


def _results(futures: list, tasks: list[tuple[Campaign, int, int]]) -> Iterator[Tally]:  # type: ignore[type-arg]
    for future, (campaign, first, last) in zip(futures, tasks, strict=True):
        try:
            yield future.result(timeout=campaign.batch_timeout)
        except FutureTimeout:  # a scheduler stuck in a call: the batch is reported, its worker stopped
            message = (f"simulations {first} to {last - 1} did not finish within {campaign.batch_timeout:g} s "
                       f"(a call that does not return?); the workload is simulation {first}'s")
            yield Tally(violation=Violation(first, TIMEOUT, None, message, campaign.workload(first).dumps()))
            return
        except BrokenProcessPool:
            message = (f"a worker process died while running simulations {first} to {last - 1} (did the "
                       f"scheduler call os._exit, or was it killed?); the workload is simulation {first}'s")
            yield Tally(violation=Violation(first, CRASHED, None, message, campaign.workload(first).dumps()))
            return


def collect(
    results: Iterator[Tally], progress: CampaignStatus, on_progress: Callable[[CampaignStatus], None] | None,
) -> Tally:
    """Merge batch results in the order given (simulation order) into `progress`, up to the first that
    found a violation: the local pool's and Ray's (`campaign_ray`) one rule for what a campaign counts."""
    for tally in results:
        progress.done.merge(tally)
        if on_progress is not None:
            on_progress(progress)
        if progress.done.violation is not None:
            break
    return progress.done


def _start_method() -> str:
    # fork starts workers in milliseconds with the package already imported; spawn elsewhere.
    return "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
