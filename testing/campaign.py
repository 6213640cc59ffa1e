"""Campaigns: many randomized simulations of a scheduler under the monitor, spread over processes.

Simulation `i` of a campaign with seed `S` plays `random_workload(Random(f"{S}:{i}"))`, so it is the
same workload whatever the number of jobs, and a violation names the seed and index that replay it
(and prints the workload itself as JSON, for `stallfree trace --workload FILE`).

Standard library only: `multiprocessing` for the jobs, `random` for the workloads.
"""

from __future__ import annotations

import multiprocessing
import random
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from stallfree.spec import paged_rules
from stallfree.spec.designs import MONITORS, PAGED, design_of
from stallfree.spec.errors import RuleViolation
from stallfree.spec.play import play
from stallfree.spec.rules import select
from stallfree.spec.workload import Workload

from .generate import random_workload

CRASHED = "CRASHED"  # Violation.rule when a call raised instead of answering (no rule judged it)

BATCH = 50  # simulations a worker runs per task: large enough to amortise the hand-off, small enough for progress


@dataclass(frozen=True, slots=True)
class Violation:
    """The first broken rule a campaign found (or CRASHED: the scheduler raised), with what replays it."""

    sim: int
    rule: str
    step: int
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
    checks: int = 0  # rule predicates evaluated (step checks and add checks)
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
        self.checks += other.checks
        self.cpu_seconds += other.cpu_seconds
        if other.violation is not None and (self.violation is None or other.violation.sim < self.violation.sim):
            self.violation = other.violation


@dataclass(frozen=True, slots=True)
class Campaign:
    """What to run: `sims` simulations from `seed`, of `factory` (plain protocol), checking `rules`."""

    sims: int
    seed: int
    factory: Callable[..., Any]
    rules: tuple[str, ...] | None = None
    jobs: int = 1

    @property
    def checks_per_step(self) -> int:
        """Rule predicates that judge each step (a rule may judge the plan and the step done)."""
        chosen = paged_rules.select(self.rules) if design_of(self.factory) == PAGED else select(self.rules)
        return sum((r.plan_check is not None) + (r.done_check is not None) for r in chosen)

    def workload(self, sim: int) -> Workload:
        return random_workload(random.Random(f"{self.seed}:{sim}"))


@dataclass(slots=True)
class Progress:
    """Progress of a running campaign, as `run` reports it after each batch."""

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
            stats = play(workload, campaign.factory, campaign.rules, monitor=MONITORS[design_of(campaign.factory)])
        except RuleViolation as error:
            tally.violation = Violation(sim, error.rule, error.step, error.message, workload.dumps())
            break
        except Exception as error:  # something raised instead of answering: stop there, with the workload
            message = f"{type(error).__name__}: {error} (raised at {_where(error)})"
            tally.violation = Violation(sim, CRASHED, -1, message, workload.dumps())
            break
        tally.sims += 1
        tally.requests += stats.accepted + stats.refused
        tally.refused += stats.refused
        tally.steps += stats.steps
        tally.busy_steps += stats.busy_steps
        tally.tokens += stats.tokens
        tally.checks += stats.checks
    tally.cpu_seconds = time.process_time() - started
    return tally


def _where(error: BaseException) -> str:
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


def run(campaign: Campaign, on_progress: Callable[[Progress], None] | None = None) -> Tally:
    """Run `campaign` on `campaign.jobs` processes; batches are merged in simulation order, and the
    campaign stops at the first batch that found a violation (the lowest simulation index among the
    batches done)."""
    progress = Progress(Tally(), campaign.sims)
    if campaign.jobs <= 1:
        results: Iterator[Tally] = map(_run_task, batches(campaign))
        return _collect(results, progress, on_progress)
    with multiprocessing.get_context(_start_method()).Pool(campaign.jobs) as pool:
        tally = _collect(pool.imap(_run_task, batches(campaign)), progress, on_progress)
        pool.terminate()  # stop batches still running after a violation
    return tally


def _collect(results: Iterator[Tally], progress: Progress, on_progress: Callable[[Progress], None] | None) -> Tally:
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
