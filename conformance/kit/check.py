"""`conform`: check a scheduler against the rules it claims, and shrink what breaks to a minimal workload."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from stallfree.spec import CANCEL, CAPABILITIES, STOP, Workload, registry
from stallfree.spec.contract import Contract
from stallfree.spec.rule import Premise
from stallfree.spec.utils.loader import TargetError
from stallfree.spec.verdict import NOT_RULES, Verdict

from ..isolation.outcome import TIMEOUT, Outcome
from ..isolation.sandbox import DEFAULT_TIMEOUT, Sandbox
from .explore import Exploration, Explorer, Finding, is_rule
from .grid import Shape, shapes
from .profiles import checked_rules, contract_of
from .shrink import MAX_RUNS, MAX_SECONDS, Shrinker

DEFAULT_EXAMPLES = 25  # per grid point; the default grid has 60 points
HANG_SHRINK_RUNS = 6

PASS = Verdict.HOLDS
FAIL = Verdict.BROKEN
NOT_CHECKED = Verdict.NOT_CHECKED
NOT_APPLICABLE = Verdict.NOT_APPLICABLE  # the target says the rule does not apply to it, and why
NOT_JUDGED = Verdict.NOT_JUDGED  # checked, but no config was explored to the end, or its premise never reached
NOT_SUPPORTED = Verdict.NOT_SUPPORTED  # the rule is about a capability the target lacks: skipped, not judged
WHAT_IT_MEANS = NOT_RULES

# The tests each capability adds, and the rules they judge (by design), for the report of what was skipped.
CAPABILITY_TESTS = {
    STOP: ("workloads in which requests stop before max_new (complete(plan, stopped))", ("TOKENS", "KV", "PROGRESS")),
    CANCEL: ("workloads with cancels: of waiting, running and ended requests, between steps and while a plan "
             "is pending (cancel(rid))", ("CANCEL", "FCFS", "KV", "PROGRESS")),
}
NEEDS = {"CANCEL": CANCEL}  # a rule judged only through a capability: without it, not supported


def requirement(rule: str, contract: Contract = registry.RESERVATION, design: str | None = None) -> str:
    """What `rule` requires, in one sentence (as `contract` states it; else as `design`, or the design
    that names it, states it)."""
    if rule in contract.ids:
        return contract.statement(rule)
    return registry.statement(rule, design) or WHAT_IT_MEANS.get(rule, "")


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
    contract: str | None = None  # the variant's contract it was checked under; None: the reference's

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
    # rule -> why its pass (or its not judged) covers only part of what it asks: never a bare "pass"
    partial: dict[str, str] = field(default_factory=dict)
    not_applicable: dict[str, str] = field(default_factory=dict)  # rule -> the target's reason
    refused: dict[str, str] = field(default_factory=dict)  # config refused by the factory -> its message
    capabilities: frozenset[str] = frozenset(CAPABILITIES)  # what the target supports beyond the plain protocol
    design: str = registry.RESERVATION.name  # whose monitor judged it (stallfree.spec.registry)
    # rule -> (how often the judged runs reached its premise, what that counts): the rules that have one
    exercised: dict[str, tuple[int, str]] = field(default_factory=dict)
    unexercised: dict[str, str] = field(default_factory=dict)  # rule -> why it is not judged: its premise never reached

    @property
    def skipped(self) -> list[str]:
        """The capability tests left out, each with the rules they would have judged."""
        rules = dict(registry.contract(self.design).capability_rules)
        return [f"{c}: {CAPABILITY_TESTS[c][0]}, judging {', '.join(rules.get(c, CAPABILITY_TESTS[c][1]))}"
                for c in CAPABILITIES if c not in self.capabilities]

    @property
    def ok(self) -> bool:
        return not self.counterexamples

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target, "profile": self.profile, "ok": self.ok,
            "rules": {
                rule: {"verdict": verdict, "partial": self.partial.get(rule),
                       "reason": self.not_applicable.get(rule) or self.unexercised.get(rule),
                       "exercised": ({"count": self.exercised[rule][0], "of": self.exercised[rule][1]}
                                     if rule in self.exercised else None), "counterexample": (
                    self.counterexamples[rule].to_json() if rule in self.counterexamples else None)}
                for rule, verdict in self.verdicts.items()
            },
            "refused_configs": self.refused,
            "notes": self.notes,
            "problems": [c.to_json() for r, c in self.counterexamples.items() if r not in self.verdicts],
            "counts": {"runs": self.runs, "steps": self.steps, "configs": len(self.shapes),
                       "configs_explored": self.shapes_explored, "examples_per_config": self.examples},
            "seed": self.seed, "seconds": round(self.seconds, 3), "ended_early": self.ended_early,
            "capabilities": {c: c in self.capabilities for c in CAPABILITIES}, "skipped": self.skipped,
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
    load_timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Check `target` (MODULE:FACTORY) against the chosen rules over the config grid (fixed fields held).
    Raises TargetError if the target cannot be loaded, ValueError for bad arguments."""
    checked = checked_rules(rules, profile)
    contract = contract_of(profile)
    design = contract.design
    if type(examples) is not int or examples < 1:
        raise ValueError(f"examples must be an int >= 1, got {examples!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    grid = contract_shapes(budget, max_seqs, kv_tokens, contract, profile)
    started = time.monotonic()
    with Sandbox(target, timeout, run_timeout, contract.name, load_timeout=load_timeout) as sandbox:
        ids = contract.ids
        not_applicable = {r: why for r, why in sandbox.not_applicable.items() if r in checked}
        unknown = [r for r in sandbox.not_applicable if r not in ids]
        if unknown:
            raise TargetError(f"{target}: stallfree_not_applicable names {unknown}, which are not rule IDs "
                              f"({sandbox.not_applicable.get('?', 'the rules are ' + ', '.join(ids))})")
        checked = tuple(r for r in checked if r not in not_applicable)
        supported = sandbox.capabilities
        unsupported = {rule for rule, capability in NEEDS.items() if capability not in supported}
        explored = Explorer(sandbox, examples, seed, progress, contract).explore(
            grid, tuple(r for r in checked if r not in unsupported))
        counterexamples = {}
        for rule, finding in explored.findings.items():
            if progress:
                progress(f"shrinking the {rule} counterexample ({len(finding.workload.requests)} requests)")
            counterexamples[rule] = minimal_counterexample(sandbox, finding, contract=contract, design=design)
    verdicts = rule_verdicts(ids, checked, not_applicable, unsupported, counterexamples, explored)
    runs = explored.runs + sum(c.shrink_runs for c in counterexamples.values())
    ended_early = why_ended_early(explored)
    report = Report(
        target, None if rules is not None else (profile or "full"), checked, verdicts, counterexamples,
        runs, explored.steps, grid, explored.shapes_explored, examples, seed,
        time.monotonic() - started, ended_early,
    )
    report.not_applicable = not_applicable
    report.refused = dict(explored.shapes_refused)
    report.capabilities = supported
    report.design = design
    premises = {r.id: r.premise for r in contract.rules if r.premise is not None}
    label_unexercised(report, explored, premises)
    label_partial(report, explored, premises)
    return report


def contract_shapes(budget: int | None, max_seqs: int | None, kv_tokens: int | None, contract: Contract,
                    profile: str | None) -> list[Shape]:
    """The config grid (fixed fields held); a contract whose schedulers refuse small budgets is explored
    above them. Raises ValueError when that leaves no config."""
    grid = [s for s in shapes(budget, max_seqs, kv_tokens) if s.token_budget >= contract.min_budget]
    if not grid:
        least = contract.min_budget
        raise ValueError(f"--budget {budget} is below {least}, the least the {profile} profile allows")
    return grid


def rule_verdicts(registry: Iterable[str], checked: tuple[str, ...], not_applicable: dict[str, Any],
                  unsupported: set[str], counterexamples: dict[str, Any], explored: Exploration) -> dict[str, Verdict]:
    """Each rule's verdict: not applicable, not checked, failed (a counterexample), not judged (nothing ran to
    the end), not supported (the target lacks what it needs), or passed."""
    verdicts: dict[str, Verdict] = {}
    for rule in registry:
        if rule in not_applicable:
            verdicts[rule] = NOT_APPLICABLE
        elif rule not in checked:
            verdicts[rule] = NOT_CHECKED
        elif rule in counterexamples and is_rule(rule, checked):
            verdicts[rule] = FAIL
        elif explored.shapes_judged == 0:  # nothing ran to the end: not even what the target lacks is known
            verdicts[rule] = NOT_JUDGED
        elif rule in unsupported:
            verdicts[rule] = NOT_SUPPORTED
        else:
            verdicts[rule] = PASS
    return verdicts


def why_ended_early(explored: Exploration) -> str | None:
    """Why the exploration ended early, also when no config was judged because every one was refused or cut."""
    ended_early = explored.ended_early
    if ended_early is None and explored.shapes_judged == 0 and explored.shapes_refused:
        ended_early = "the factory refused every config"
    elif ended_early is None and explored.shapes_judged == 0 and explored.shapes_cut:
        ended_early = f"{explored.shapes_cut[0][1]} at every config"
    return ended_early


def label_unexercised(report: Report, explored: Exploration, premises: dict[str, Premise]) -> None:
    """Count, for every rule that held and has a premise, how often the runs reached it; a rule whose
    whole premise no run reached was never exercised: not judged, never holds."""
    for rule, verdict in report.verdicts.items():
        premise = premises.get(rule)
        if verdict != PASS or premise is None or rule not in explored.exercised:
            continue
        count = explored.exercised[rule]
        report.exercised[rule] = (count, premise.noun)
        if count == 0 and premise.whole:
            report.verdicts[rule] = NOT_JUDGED
            report.unexercised[rule] = f"never exercised: {premise.absent}"


def label_partial(report: Report, explored: Exploration, premises: dict[str, Premise] | None = None) -> None:
    """Say, for every rule that passed, what part of its judgement is missing, and note it (a rule whose
    premise is only part of it, never reached: that part)."""
    gaps = []
    num_shapes = len(report.shapes)
    if explored.shapes_judged < num_shapes:
        why = []
        if explored.shapes_refused:
            why.append(f"{len(explored.shapes_refused)} refused by the factory")
        if explored.shapes_cut:
            problems = sorted({p for _, p in explored.shapes_cut})
            why.append(f"{len(explored.shapes_cut)} ended by {'/'.join(problems)}")
        left = num_shapes - explored.shapes_explored
        if left:
            why.append(f"{left} not reached")
        gaps.append(f"{explored.shapes_judged} of {num_shapes} configs ({', '.join(why)})")
        report.notes.append(f"configs explored to the end: {explored.shapes_judged} of {num_shapes} ({', '.join(why)})")
    for rule, count in explored.runs_cut.items():
        gaps.append(f"{count} run(s) judged only up to the step where {rule}, already broken, broke again")
        report.notes.append(
            f"after {rule} broke, {count} run(s) were judged only up to the step where it broke again: past it "
            f"the kit's model of the scheduler no longer matches the scheduler")
    for rule, verdict in report.verdicts.items():
        if verdict != PASS:
            continue
        rule_gaps = list(gaps)
        premise = (premises or {}).get(rule)
        if premise is not None and report.exercised.get(rule, (None,))[0] == 0:
            rule_gaps.insert(0, premise.absent)
        if rule == "KV" and explored.runs_without_free_kv:
            rule_gaps.insert(0, f"plans only in {explored.runs_without_free_kv} run(s): the scheduler shows no "
                                "int free_kv, so the return of reservations was not judged there")
        if rule_gaps:
            report.partial[rule] = "; ".join(rule_gaps)


def minimal_counterexample(
    sandbox: Sandbox, finding: Finding, max_seconds: float = MAX_SECONDS, contract: Contract = registry.RESERVATION,
    design: str | None = None,
) -> Counterexample:
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
        requires = requirement(finding.rule, contract, design)
        return Counterexample(finding.rule, o.step, message, requires, finding.workload,
                              o.call, o.traceback, False, 1, tuple(rules), repro_name(contract))
    shrunk = Shrinker(run, finding.rule, max_runs, max_seconds).shrink(finding.workload, start)
    o = shrunk.outcome
    return Counterexample(
        finding.rule, o.step, o.message, requirement(finding.rule, contract, design), shrunk.workload, o.call,
        o.traceback, shrunk.minimal, shrunk.runs, tuple(rules), repro_name(contract),
    )


def repro_name(contract: Contract) -> str | None:
    """The contract a pasted test names (a variant's, by --contract); None for a design, which the
    replayed factory declares itself."""
    return None if contract.is_design else contract.name
