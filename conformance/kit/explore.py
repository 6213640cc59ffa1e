"""Exploring a target with Hypothesis-generated workloads, grid point by grid point.

At each point Hypothesis generates workloads and shrinks each failure it meets. Every failing run is
kept, the smallest per rule, so a target that breaks two rules yields two counterexamples. A broken
rule is then dropped from the checked set and the point explored again: one broken rule does not
hide another.

What no rule names ends the point, not the exploration: after a CRASH or a PROTOCOL error the kit goes
on to the next point, so the other rules are still judged on the other configs (a TIMEOUT ends the
exploration, as every further hang would cost a timeout per run). A config the factory refuses
(ValueError or TypeError from the factory) is skipped and reported. A broken rule whose break leaves
the kit's model of the scheduler behind it (TRACKING) stays watched: a later run in which it breaks
again is judged up to that step only, so its consequences are never reported as other rules' breaks.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings

from stallfree.spec import CANCEL, PROTOCOL, STOP, Workload, registry
from stallfree.spec.contract import Contract

from ..isolation.outcome import REFUSED, TIMEOUT, Outcome
from ..isolation.sandbox import Sandbox
from .grid import Shape
from .variant_strategies import variant_workloads

NEVER_FIT = "NEVER-FIT"
# Rules whose break leaves the kit's model of the scheduler unable to follow it: a duplicate entry, a
# chunk past the prompt or a token at the wrong step moves the scheduler's state where the model's
# does not go, and a request accepted or refused against the contract makes the two disagree on which
# requests exist. After one of these breaks, the rules judged later in the same run could report
# consequences of it, not breaks of their own. (SLOTS, KV, BUDGET and the policy rules leave the model
# in step: it follows admissions and tokens whatever they are.) A request planned after its cancel took
# effect is one the model has ended. In the paged design a block held that the model freed (BLOCKS),
# a recompute the model does not run (RECOMPUTE) and a token the model does not count (TOKENS-KEPT)
# move the scheduler's later preemptions where the model's do not go. In the prefix design a hit the
# model does not take, or takes where the scheduler does not (HIT-SAME-TOKENS, CACHED-NOT-PREFILLED,
# SHARED-READONLY), moves the blocks each request holds: BLOCKS and later hits then follow from it.
TRACKING = ("ONE-ENTRY", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", NEVER_FIT, "CANCEL", "BLOCKS", "RECOMPUTE",
            "TOKENS-KEPT", "HIT-SAME-TOKENS", "CACHED-NOT-PREFILLED", "SHARED-READONLY")


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
    shapes_explored: int = 0  # grid points gone through, whatever came of them
    shapes_judged: int = 0  # of which explored to the end, with no CRASH, PROTOCOL or TIMEOUT
    refused: dict[tuple[int, int, int], str] = field(default_factory=dict)  # config -> the factory's refusal
    shapes_refused: list[tuple[str, str]] = field(default_factory=list)  # (point, the factory's refusal): none judged
    shapes_cut: list[tuple[str, str]] = field(default_factory=list)  # (point, problem) ended by a problem
    runs_cut: dict[str, int] = field(default_factory=dict)  # known broken rule -> runs it cut short
    runs_without_free_kv: int = 0  # judged runs in which the target showed no int free_kv
    exercised: dict[str, int] = field(default_factory=dict)  # rule -> its premise reached, over the judged runs
    ended_early: str | None = None  # why exploration stopped before the grid's end

    @property
    def blocking(self) -> Finding | None:
        """A finding that no rule names (PROTOCOL, CRASH, TIMEOUT...)."""
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


def count_run(result: Exploration, outcome: Outcome) -> None:
    """Counts one judged run into `result`: its steps, what cut it short, whether it showed its free KV."""
    result.runs += 1
    result.steps += outcome.steps
    if outcome.cut_by is not None:
        result.runs_cut[outcome.cut_by] = result.runs_cut.get(outcome.cut_by, 0) + 1
    if outcome.free_kv_shown is False:
        result.runs_without_free_kv += 1
    for rule, count in outcome.exercised.items():
        result.exercised[rule] = result.exercised.get(rule, 0) + count


class Explorer:
    def __init__(
        self, sandbox: Sandbox, examples: int, seed: int, progress: Callable[[str], None] | None = None,
        contract: Contract = registry.RESERVATION,
    ):
        self.sandbox = sandbox
        self.contract = contract  # a variant's contract: its workloads get budget schedules or priorities
        self.examples = examples
        self.seed = seed
        self.progress = progress or (lambda line: None)
        self.result = Exploration()

    def explore(self, shapes: list[Shape], rules: tuple[str, ...]) -> Exploration:
        checked = rules
        known: tuple[str, ...] = ()  # broken rules still watched (TRACKING), see the module's docstring
        result = self.result
        started = time.monotonic()
        for index, shape in enumerate(shapes):
            problem, judged = None, False
            while checked:
                new, problem, judged_now = self._explore_shape(shape, checked, known, index)
                judged = judged or judged_now
                broken = [r for r in checked if r in new and is_rule(r, checked)]
                checked = tuple(r for r in checked if r not in broken)
                known += tuple(r for r in broken if r in TRACKING)
                if problem is not None or not broken:
                    break
            result.shapes_explored = index + 1
            if problem is not None:
                result.shapes_cut.append((shape.describe(), problem))
            elif not judged:
                why = next(iter(result.refused.values()), "")
                refusal = next((m for (b, s, _), m in result.refused.items()
                                if (b, s) == (shape.token_budget, shape.max_seqs)), why)
                result.shapes_refused.append((shape.describe(), " ".join(refusal.split())[:300]))
            else:
                result.shapes_judged += 1
            self.progress(
                f"[{index + 1}/{len(shapes)}] {shape.describe()}: {result.runs} runs, "
                f"{result.steps} steps, {len(result.findings)} broken, {time.monotonic() - started:.1f} s"
            )
            if problem == TIMEOUT:
                result.ended_early = f"{TIMEOUT} at {shape.describe()} (each further hang would cost a timeout)"
                break
            if not checked:
                result.ended_early = "every checked rule is broken"
                break
        return result

    def _explore_shape(
        self, shape: Shape, checked: tuple[str, ...], known: tuple[str, ...], index: int,
    ) -> tuple[set[str], str | None, bool]:
        """Run Hypothesis at one grid point. Returns what broke there (rules, PROTOCOL, CRASH...), the
        problem no rule names if one stopped the point, and whether any workload was judged (a factory
        that refuses every config of the point judges none)."""
        best: dict[str, tuple[tuple[int, ...], Workload, Outcome]] = {}
        hung = False
        judged = False
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
        @given(variant_workloads(shape, NEVER_FIT in checked, self.contract, STOP in self.sandbox.capabilities,
                                 CANCEL in self.sandbox.capabilities, "HIT-SAME-TOKENS" in checked))
        def probe(workload: Workload) -> None:
            nonlocal hung, judged
            if hung:  # a hang costs a timeout per run: Hypothesis does not shrink it, the Shrinker does
                raise found(TIMEOUT)()
            c = workload.config
            config = (c.token_budget, c.max_seqs, c.kv_tokens)
            if config in result.refused:
                return
            outcome = self.sandbox.run(workload, rules, list(known))
            if outcome.rule == REFUSED:
                result.refused[config] = outcome.message
                return
            judged = True
            count_run(result, outcome)
            rule = outcome.rule
            if rule is None:
                return
            key = size(workload)
            if rule not in best or key < best[rule][0]:
                best[rule] = (key, workload, outcome)
            hung = rule == TIMEOUT
            raise found(rule)(outcome.message)

        # Hypothesis hashes the test's source on every run for its example database's key; the kit keeps
        # no database, so it names none (a key of None is what Hypothesis itself passes without one).
        probe._hypothesis_internal_database_key = None  # type: ignore[attr-defined]
        try:
            probe()
        except Exception as error:  # Found, or Hypothesis' group of them, or its flakiness report
            if not best:
                print(f"stallfree conform: Hypothesis stopped: {type(error).__name__}: {error}", file=sys.stderr)
                raise
        for rule, (_, workload, outcome) in best.items():
            if rule not in result.findings:
                result.findings[rule] = Finding(rule, workload, outcome, shape, checked)
        problem = next((r for r in best if not is_rule(r, checked)), None)
        return set(best), problem, judged
