"""Refinement: the Z3 step, as the theorems state it, is what the code does, on two sets of states.

- **Every state the model checker reaches** at a bound (`on_model_states`): before each state's
  step is explored, the Z3 step is evaluated on it and the scheduler steps on a copy.
- **Random states** (`on_random_states`): workloads of up to 64 requests drawn by
  `stallfree.testing.generate`, played through the scheduler under the monitor, the Z3 step compared
  before every step. Two shapes of workload: small (few slots, scarce KV: where first come first
  served stops at a head that does not fit) and wide (up to 64 requests arriving in bursts, budgets
  and slots up to 96 and 64: where a step admits many requests at once, so a cap on admissions
  shows). At most `PER_WORKLOAD` states come from one workload, and each is played for at most
  `concrete.step_bound` steps.

Every `CROSS_CHECK`-th state is also evaluated by Z3 itself (`concrete.Evaluator`), so the compiled
terms are held to the solver's meaning of them in every run.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stallfree.reference import Scheduler
from stallfree.spec import Config, Monitor
from stallfree.spec.verdict import Verdict
from stallfree.testing.generate import Ranges, random_workload

from ..explicit import modelcheck
from ..explicit.bounds import Bounds
from ..explicit.counterexample import Counterexample
from ..explicit.snapshot import Hidden, fork
from .concrete import CompiledStep, Evaluator, RequestView, StepModel, StepResult, compare, step_differences
from .policy import Policy

SIZES = (8, 16, 32, 64)  # the Z3 step is compiled once for each; a state takes the smallest that holds it
MAX_REQUESTS = SIZES[-1]
PER_WORKLOAD = 200
CROSS_CHECK = 500
BURST = Ranges(max_budget=96, max_seqs=64, max_prompt=4, max_new=4, max_requests=MAX_REQUESTS, max_gap=0,
               never_fit_share=0.0)
SMALL = Ranges(max_budget=8, max_seqs=4, max_prompt=12, max_new=5, max_requests=8, never_fit_share=0.05)
WIDE = Ranges(max_budget=96, max_seqs=64, max_prompt=8, max_new=6, max_requests=MAX_REQUESTS, max_gap=2,
              never_fit_share=0.02)
SHAPES = (SMALL, WIDE, BURST)

Say = Callable[[str], None]
_COMPILED: dict[str, dict[int, CompiledStep]] = {}  # by policy name, then size: built once a process
_SOLVED: dict[str, dict[int, Evaluator]] = {}


@dataclass(frozen=True, slots=True)
class DifferentialResult:
    states: int  # states compared
    workloads: int
    most_admitted: int  # the most admissions the Z3 step planned in one of the states compared
    seconds: float
    difference: str | None  # the first difference, or None
    counterexample: Counterexample | None = None  # from the model checker: the path to the state
    complete: bool = True  # False: the model check stopped early, so not every state was compared

    @property
    def verdict(self) -> Verdict:
        """unknown if not every state was compared, BROKEN if one differed, else holds."""
        if not self.complete:
            return Verdict.UNKNOWN
        return Verdict.HOLDS if self.difference is None else Verdict.BROKEN


class Models:
    """The Z3 step of one policy, compiled for each size, and Z3 itself for the cross-check: a
    `concrete.StepModel` that takes, for each state, the smallest size that holds it."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = Policy() if policy is None else policy
        self._compiled = _COMPILED.setdefault(self.policy.name, {})
        self._solved = _SOLVED.setdefault(self.policy.name, {})
        self.evaluated = 0
        self.most_admitted = 0  # the most admissions the Z3 step planned in one of the states

    def evaluate(self, config: Config, views: Sequence[RequestView], free_kv: int) -> StepResult:
        size = next((n for n in SIZES if n >= len(views)), None)
        if size is None:
            raise ValueError(f"{len(views)} unfinished requests at once; the Z3 step is compiled up to {MAX_REQUESTS}")
        self.evaluated += 1
        model: StepModel
        if self.evaluated % CROSS_CHECK == 1:
            model = self._solved.get(size) or self._solved.setdefault(size, Evaluator(size, self.policy))
        else:
            model = self._compiled.get(size) or self._compiled.setdefault(size, CompiledStep(size, self.policy))
        result = model.evaluate(config, views, free_kv)
        self.most_admitted = max(self.most_admitted, sum(not views[i].admitted for i, _ in result.plan))
        return result


def on_random_states(count: int, factory: Callable[..., Any] = Scheduler, policy: Policy | None = None,
                     seed: int = 14, say: Say | None = None) -> DifferentialResult:
    """Compare the Z3 step with `factory` on at least `count` states of random workloads."""
    began = time.perf_counter()
    models = Models(policy)
    rng = random.Random(seed)
    workloads = 0
    while models.evaluated < count:
        workload = random_workload(rng, SHAPES[workloads % len(SHAPES)])
        workloads += 1
        for difference in compare(workload, models, factory, PER_WORKLOAD):
            return DifferentialResult(models.evaluated, workloads, models.most_admitted, time.perf_counter() - began,
                                      difference)
        if say is not None and workloads % 50 == 0:
            say(f"differential: {models.evaluated:,} random states, {workloads} workloads")
    return DifferentialResult(models.evaluated, workloads, models.most_admitted, time.perf_counter() - began, None)


class OnModelStates:
    """The model checker's `inspect`: the Z3 step against the code on every state it expands."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.models = Models(policy)
        self.seconds = 0.0

    def __call__(self, monitor: Monitor) -> str | None:
        began = time.perf_counter()
        found = step_differences(fork(monitor), self.models, "this state")
        self.seconds += time.perf_counter() - began
        return found[0] if found else None

    def outcome(self, result: modelcheck.CheckResult) -> DifferentialResult:
        """What the check `result` (run with this inspector) says of the differential."""
        models, ce = self.models, result.inspected
        if ce is None and result.counterexample is not None:  # the code broke a rule: the Z3 step keeps them all
            ce = result.counterexample
            return DifferentialResult(models.evaluated, 0, models.most_admitted, self.seconds,
                                      f"the code broke {ce.rule}, which the Z3 step keeps: {ce.message}", ce)
        if ce is None and not result.complete:
            return DifferentialResult(models.evaluated, 0, models.most_admitted, self.seconds, None, None,
                                      complete=False)
        return DifferentialResult(models.evaluated, 0, models.most_admitted, self.seconds,
                                  None if ce is None else ce.message, ce)


def on_model_states(bounds: Bounds, factory: Callable[..., Any] = Scheduler, hidden: Hidden | None = None,
                    policy: Policy | None = None, max_states: int | None = None) -> DifferentialResult:
    """Compare the Z3 step with `factory` on every state the model checker reaches within `bounds`."""
    inspector = OnModelStates(policy)
    return inspector.outcome(modelcheck.check(bounds, factory, hidden, max_states, inspect=inspector, compact=True))
