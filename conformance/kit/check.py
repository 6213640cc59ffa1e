"""`conform`: check a scheduler against the rules it claims, and shrink what breaks to a minimal workload."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from stallfree.spec import Workload
from stallfree.spec.designs import REGISTRIES, statement
from stallfree.spec.verdict import NOT_RULES, Verdict

from ..isolation.outcome import TIMEOUT, Outcome
from ..isolation.sandbox import DEFAULT_TIMEOUT, Sandbox
from .explore import Explorer, Finding, is_rule
from .grid import Shape, shapes
from .profiles import checked_rules, design_of_profile
from .shrink import MAX_RUNS, MAX_SECONDS, Shrinker

DEFAULT_EXAMPLES = 25  # per grid point; the default grid has 60 points
HANG_SHRINK_RUNS = 6

PASS = Verdict.HOLDS
FAIL = Verdict.BROKEN
NOT_CHECKED = Verdict.NOT_CHECKED
NOT_JUDGED = Verdict.NOT_JUDGED  # checked, but a PROTOCOL, CRASH or TIMEOUT stopped the exploration first
WHAT_IT_MEANS = NOT_RULES


def requirement(rule: str) -> str:
    """What `rule` requires, in one sentence."""
    return statement(rule) or WHAT_IT_MEANS.get(rule, "")


@dataclass(frozen=True, slots=True)
class Counterexample:
    rule: str
    step: int | None
    message: str  # what happened
    requires: str  # what the rule requires
    workload: Workload
    call: str
    traceback: str
    minimal: bool
    shrink_runs: int
    rules: tuple[str, ...]  # the rules checked when it was found (it breaks `rule` first among them)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "step": self.step, "happened": self.message, "requires": self.requires,
            "workload": self.workload.to_json(), "call": self.call, "traceback": self.traceback,
            "minimal": self.minimal, "shrink_runs": self.shrink_runs,
        }


@dataclass(slots=True)
class Report:
    target: str
    profile: str | None
    checked: tuple[str, ...]
    verdicts: dict[str, Verdict]
    counterexamples: dict[str, Counterexample]
    runs: int
    steps: int
    shapes: list[Shape]
    shapes_explored: int
    examples: int
    seed: int
    seconds: float
    ended_early: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.counterexamples

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target, "profile": self.profile, "ok": self.ok,
            "rules": {
                rule: {"verdict": verdict, "counterexample": (
                    self.counterexamples[rule].to_json() if rule in self.counterexamples else None)}
                for rule, verdict in self.verdicts.items()
            },
            "problems": [c.to_json() for r, c in self.counterexamples.items() if r not in self.verdicts],
            "counts": {"runs": self.runs, "steps": self.steps, "configs": len(self.shapes),
                       "configs_explored": self.shapes_explored, "examples_per_config": self.examples},
            "seed": self.seed, "seconds": round(self.seconds, 3), "ended_early": self.ended_early,
        }


def conform(
    target: str,
    rules: Iterable[str] | None = None,
    profile: str | None = None,
    budget: int | None = None,
    max_seqs: int | None = None,
    kv_tokens: int | None = None,
    examples: int = DEFAULT_EXAMPLES,
    seed: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
    run_timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Check `target` (MODULE:FACTORY) against the chosen rules over the config grid (fixed fields held).
    Raises TargetError if the target cannot be loaded, ValueError for bad arguments."""
    checked = checked_rules(rules, profile)
    design = design_of_profile(profile if rules is None else None)
    if type(examples) is not int or examples < 1:
        raise ValueError(f"examples must be an int >= 1, got {examples!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    grid = shapes(budget, max_seqs, kv_tokens)
    started = time.monotonic()
    with Sandbox(target, timeout, run_timeout, design) as sandbox:
        explored = Explorer(sandbox, examples, seed, progress).explore(grid, checked)
        counterexamples = {}
        for rule, finding in explored.findings.items():
            if progress:
                progress(f"shrinking the {rule} counterexample ({len(finding.workload.requests)} requests)")
            counterexamples[rule] = minimal_counterexample(sandbox, finding)
    blocked = explored.blocking is not None
    verdicts = {}
    for rule in (r.id for r in REGISTRIES[design]):
        if rule not in checked:
            verdicts[rule] = NOT_CHECKED
        elif rule in counterexamples and is_rule(rule, checked):
            verdicts[rule] = FAIL
        else:
            verdicts[rule] = NOT_JUDGED if blocked else PASS
    runs = explored.runs + sum(c.shrink_runs for c in counterexamples.values())
    return Report(
        target, None if rules is not None else (profile or "full"), checked, verdicts, counterexamples,
        runs, explored.steps, grid, explored.shapes_explored, examples, seed,
        time.monotonic() - started, explored.ended_early,
    )


def minimal_counterexample(sandbox: Sandbox, finding: Finding, max_seconds: float = MAX_SECONDS) -> Counterexample:
    """Shrink with only the broken rule checked (PROTOCOL and the like: with none but the protocol's own
    checks): the counterexample is then minimal for that rule alone, as the pasted test replays it. The
    rule still breaks at the same step with fewer rules checked, since checks never change the shadow."""
    rules = [finding.rule] if is_rule(finding.rule, finding.rules) else []

    def run(workload: Workload) -> Outcome:
        return sandbox.run(workload, rules)

    # A hang costs a full timeout per shrinking run: a few runs only.
    max_runs = HANG_SHRINK_RUNS if finding.rule == TIMEOUT else MAX_RUNS
    start = run(finding.workload)
    if start.rule != finding.rule:  # the target is not deterministic: report what was seen, unshrunk
        o = finding.outcome
        message = f"{o.message} (replayed, the same workload did not break {finding.rule} again: the target " \
                  "is not deterministic)"
        return Counterexample(finding.rule, o.step, message, requirement(finding.rule), finding.workload, o.call,
                              o.traceback, False, 1, tuple(rules))
    shrunk = Shrinker(run, finding.rule, max_runs, max_seconds).shrink(finding.workload, start)
    o = shrunk.outcome
    return Counterexample(
        finding.rule, o.step, o.message, requirement(finding.rule), shrunk.workload, o.call, o.traceback,
        shrunk.minimal, shrunk.runs, tuple(rules),
    )
