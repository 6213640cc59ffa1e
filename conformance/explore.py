"""Exploring a target with Hypothesis-generated workloads, grid point by grid point.

At each point Hypothesis generates workloads and shrinks each failure it meets. Every failing run is
kept, the smallest per rule, so a target that breaks two rules yields two counterexamples. A broken
rule is then dropped from the checked set and the point explored again: one broken rule does not
hide another. A failure that no rule names (PROTOCOL, CRASH, TIMEOUT) ends the exploration, as no
later run could be judged.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings

from stallfree.spec import CANCEL, PROTOCOL, STOP, Workload

from .grid import Shape
from .outcome import TIMEOUT, Outcome
from .sandbox import Sandbox
from .strategies import workloads

NEVER_FIT = "NEVER-FIT"


@dataclass(frozen=True, slots=True)
class Finding:
    """The smallest failing run met for one rule (or PROTOCOL, CRASH, TIMEOUT)."""

    rule: str
    workload: Workload
    outcome: Outcome
    shape: Shape
    rules: tuple[str, ...]  # the rules checked in the run that found it


@dataclass(slots=True)
class Exploration:
    findings: dict[str, Finding] = field(default_factory=dict)
    runs: int = 0  # workloads played, shrinking included
    steps: int = 0  # steps judged over all runs
    shapes_explored: int = 0
    ended_early: str | None = None  # why exploration stopped before the grid's end

    @property
    def blocking(self) -> Finding | None:
        """A finding that no rule names: it stops every further judgement."""
        return next((f for f in self.findings.values() if not is_rule(f.rule, f.rules)), None)


def is_rule(name: str, rules: tuple[str, ...]) -> bool:
    return name in rules and name != PROTOCOL


class Found(Exception):
    """Raised inside a Hypothesis test to mark a failing run; one subclass per rule, so that Hypothesis
    shrinks each rule's failures apart from the others."""


@cache  # one class per rule, the same on every call
def found(rule: str) -> type[Found]:
    return type(f"Found_{rule.replace('-', '_')}", (Found,), {})


def size(w: Workload) -> tuple[int, ...]:
    """Smaller is simpler: fewer requests, then less work, then earlier arrivals, then smaller limits."""
    work = sum(a.prompt_len + a.max_new for a in w.requests if type(a.prompt_len) is int and type(a.max_new) is int)
    c = w.config
    lifecycle = len(w.cancels) + sum(a.stop_after is not None for a in w.requests)
    return (len(w.requests), lifecycle, work, sum(a.arrival_step for a in w.requests), c.token_budget, c.max_seqs,
            c.kv_tokens)


class Explorer:
    def __init__(self, sandbox: Sandbox, examples: int, seed: int, progress: Callable[[str], None] | None = None):
        self.sandbox = sandbox
        self.examples = examples
        self.seed = seed
        self.progress = progress or (lambda line: None)
        self.result = Exploration()

    def explore(self, shapes: list[Shape], rules: tuple[str, ...]) -> Exploration:
        checked = rules
        started = time.monotonic()
        for index, shape in enumerate(shapes):
            while checked:
                new = self._explore_shape(shape, checked, index)
                if self.result.blocking is not None:
                    self.result.ended_early = f"{self.result.blocking.rule} at {shape.describe()}"
                    return self.result
                if not new:
                    break
                checked = tuple(r for r in checked if r not in new)
            self.result.shapes_explored = index + 1
            self.progress(
                f"[{index + 1}/{len(shapes)}] {shape.describe()}: {self.result.runs} runs, "
                f"{self.result.steps} steps, {len(self.result.findings)} broken, {time.monotonic() - started:.1f} s"
            )
            if not checked:
                self.result.ended_early = "every checked rule is broken"
                break
        return self.result

    def _explore_shape(self, shape: Shape, checked: tuple[str, ...], index: int) -> set[str]:
        """Run Hypothesis at one grid point; returns the rules (or PROTOCOL, ...) newly found broken."""
        best: dict[str, tuple[tuple[int, ...], Workload, Outcome]] = {}
        hung = False
        rules = list(checked)
        result = self.result

        # The kit's own settings, whatever profile the caller's test session loaded (a profile with
        # another backend or a derandomized seed would change what the kit explores).
        @settings(
            settings.get_profile("default"), backend="hypothesis",
            max_examples=self.examples, database=None, deadline=None, derandomize=False,
            phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet, report_multiple_bugs=True,
        )
        @seed(self.seed * 1000 + index)
        @given(workloads(shape, NEVER_FIT in checked, STOP in self.sandbox.capabilities,
                         CANCEL in self.sandbox.capabilities))
        def probe(workload: Workload) -> None:
            nonlocal hung
            if hung:  # a hang costs a timeout per run: Hypothesis does not shrink it, the Shrinker does
                raise found(TIMEOUT)()
            outcome = self.sandbox.run(workload, rules)
            result.runs += 1
            result.steps += outcome.steps
            rule = outcome.rule
            if rule is None:
                return
            key = size(workload)
            if rule not in best or key < best[rule][0]:
                best[rule] = (key, workload, outcome)
            hung = rule == TIMEOUT
            raise found(rule)(outcome.message)

        try:
            probe()
        except Exception as error:  # Found, or Hypothesis' group of them, or its flakiness report
            if not best:
                print(f"stallfree conform: Hypothesis stopped: {type(error).__name__}: {error}", file=sys.stderr)
                raise
        for rule, (_, workload, outcome) in best.items():
            if rule not in result.findings:
                result.findings[rule] = Finding(rule, workload, outcome, shape, checked)
        return set(best)
