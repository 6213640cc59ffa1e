"""What `stallfree prove` runs: the model checker, every Z3 theorem, the differential check that ties
the Z3 step to the reference, and CrossHair on the contracts. Each yields rows of one table: claim
(rule ID), method, bound, result, seconds, and what went wrong."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from stallfree.reference import Scheduler
from stallfree.spec import RULE_IDS
from stallfree.spec.invariants import INVARIANTS
from stallfree.spec.verdict import Verdict
from stallfree.testing.generate import Ranges, random_workload

from .contracts import planted, planted_contracts
from .contracts import run as crosshair_run
from .controls import twin_fault
from .explicit import modelcheck
from .explicit.bounds import Bounds
from .explicit.counterexample import replay
from .explicit.snapshot import Hidden
from .smt.concrete import Evaluator, compare
from .smt.loops import LOOP_THEOREMS, prove_loop
from .smt.policy import Policy
from .smt.reach import reach
from .smt.theorems import DEFAULT_N, THEOREMS, prove

HOLDS, NOT_REFUTED, BROKEN, UNKNOWN = Verdict.HOLDS, Verdict.NOT_REFUTED, Verdict.BROKEN, Verdict.UNKNOWN
METHODS = ("model", "z3", "differential", "crosshair")
DEFAULT_BOUND = "3,2,8,4,3,2"
DIFFERENTIAL_WORKLOADS = 12
DIFFERENTIAL_SLOTS = 6
# Small sizes, where every branch of the policy occurs within a few steps; all requests fit K.
DIFFERENTIAL_RANGES = Ranges(max_budget=8, max_seqs=4, max_prompt=12, max_new=5,
                             max_requests=DIFFERENTIAL_SLOTS, never_fit_share=0.0)

Say = Callable[[str], None]


@dataclass(slots=True)
class Row:
    claim: str
    method: str
    bound: str
    result: str
    seconds: float
    detail: str = ""
    counterexample: dict[str, Any] | None = field(default=None)

    @property
    def failed(self) -> bool:
        return self.result in (BROKEN, UNKNOWN)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Options:
    bound: Bounds = field(default_factory=lambda: Bounds.parse(DEFAULT_BOUND))
    factory: Any = Scheduler
    hidden: Hidden | None = None
    policy: Policy = field(default_factory=Policy)
    num_requests: int = DEFAULT_N
    crosshair_target: str = crosshair_run.CONTRACTS
    fault_rule: str | None = None  # CrossHair runs the copy with this rule's bug planted instead
    crosshair_seconds: float = crosshair_run.PER_CONDITION_S
    methods: tuple[str, ...] = METHODS
    max_states: int | None = None


def model_rows(o: Options, say: Say) -> list[Row]:
    def progress(states: int, transitions: int, depth: int, seconds: float) -> None:
        say(f"model check: {states:,} states, {transitions:,} transitions, depth {depth}, {seconds:.0f} s")

    result = modelcheck.check(o.bound, o.factory, o.hidden, o.max_states, progress)
    bound = f"{o.bound.label()}: {result.states:,} states"
    figures = (f"{result.states:,} states, {result.transitions:,} transitions, depth {result.depth}, "
               f"{result.states_per_second:,.0f} states/s")
    if result.counterexample is not None:
        ce = result.counterexample
        return [Row(ce.rule, "model check", bound, BROKEN, result.seconds, ce.describe(),
                    {"workload": ce.workload.to_json(), "replayed": ce.replayed})]
    if not result.complete:
        return [Row("ALL RULES", "model check", bound, UNKNOWN, result.seconds, f"stopped at max_states; {figures}")]
    return [
        Row("ALL RULES", "model check", bound, HOLDS, result.seconds,
            f"{len(RULE_IDS)} rules on every transition, {len(INVARIANTS)} state invariants in every state; "
            f"{figures}"),
        Row("PROGRESS", "model check (liveness)", bound, HOLDS, 0.0,
            f"no cycle with work pending; longest behaviour {result.longest_steps} steps; "
            f"any state finishes its work within {result.drain_bound} steps"),
    ]


def z3_rows(o: Options, say: Say) -> list[Row]:
    rows = []
    for theorem in THEOREMS:
        say(f"z3: {theorem.name} ({o.policy.name}, N={o.num_requests})")
        outcome = prove(theorem, o.policy, o.num_requests)
        row = _z3_row(theorem.name, f"Z3 inductive step ({o.policy.name})", f"N={o.num_requests}", outcome)
        if outcome.result == "counterexample":
            say(f"z3: {theorem.name}: searching for a workload that reaches the counterexample")
            workload = reach(theorem, o.policy)
            if workload is not None:
                row.detail += f"\nreached from a new scheduler by the workload: {workload.dumps()}"
                row.counterexample = {**(row.counterexample or {}), "workload": workload.to_json()}
                twin = twin_fault(o.policy)
                if twin is not None:
                    row.detail += f"\nreplayed on faults.{twin.__name__} under the monitor: {replay(workload, twin)}"
        rows.append(row)
    for loop in LOOP_THEOREMS:
        say(f"z3: {loop.name} ({o.policy.name})")
        outcome = prove_loop(loop, o.policy)
        rows.append(_z3_row(loop.name, f"Z3 loop iteration ({o.policy.name})", "any N", outcome))
    return rows


def _z3_row(claim: str, method: str, bound: str, outcome: Any) -> Row:
    result = {"holds": HOLDS, "counterexample": BROKEN}.get(outcome.result, UNKNOWN)
    detail = "" if outcome.counterexample is None else f"counterexample state: {outcome.counterexample}"
    if result == UNKNOWN:
        detail = "the solver ran out of time: nothing proved"
    return Row(claim, method, bound, result, outcome.seconds, detail, outcome.counterexample)


def differential_rows(o: Options, say: Say) -> list[Row]:
    began = time.perf_counter()
    evaluator = Evaluator(DIFFERENTIAL_SLOTS, o.policy)
    rng = random.Random(5)
    for i in range(DIFFERENTIAL_WORKLOADS):
        say(f"differential: workload {i + 1}/{DIFFERENTIAL_WORKLOADS}")
        workload = random_workload(rng, DIFFERENTIAL_RANGES)
        for difference in compare(workload, evaluator):
            return [Row("Z3 STEP = REFERENCE", "differential", f"{DIFFERENTIAL_WORKLOADS} workloads", BROKEN,
                        time.perf_counter() - began, difference)]
    return [Row("Z3 STEP = REFERENCE", f"differential ({o.policy.name})", f"{DIFFERENTIAL_WORKLOADS} random workloads",
                HOLDS, time.perf_counter() - began, "the Z3 step planned, emitted and left what the reference did")]


def crosshair_rows(o: Options, say: Say) -> list[Row]:
    if o.fault_rule is not None:
        return [planted_row(o.fault_rule, o.crosshair_seconds, say)]
    say(f"crosshair: {o.crosshair_target}, {o.crosshair_seconds:g} s per condition")
    result = crosshair_run.check(o.crosshair_target, o.crosshair_seconds)
    bound = f"{o.crosshair_seconds:g} s/condition"
    if result.error is not None:
        return [Row("CONTRACTS", "CrossHair", bound, UNKNOWN, result.seconds, result.error)]
    if result.found:
        return [Row("CONTRACTS", "CrossHair", bound, BROKEN, result.seconds, "; ".join(result.found))]
    return [Row("CONTRACTS", "CrossHair", bound, NOT_REFUTED, result.seconds,
                "add/schedule/complete: no counterexample within the limit (CrossHair never proves)")]


def planted_row(rule: str, seconds: float, say: Say) -> Row:
    """CrossHair on the copy of the reference with `rule`'s bug planted: the contract stating `rule`
    must be broken, by a counterexample that the reference's own contract keeps."""
    target = planted_contracts.TARGETS.get(rule)
    if target is None:
        return Row(rule, "CrossHair", "-", f"n/a (no contract for {rule})", 0.0,
                   "no CrossHair contract states this rule")
    say(f"crosshair: {target}, {seconds:g} s per condition")
    result = crosshair_run.check(target, seconds)
    bound = f"{seconds:g} s/condition"
    method = f"CrossHair ({planted.PLANTED[rule].__name__})"
    if result.error is not None:
        return Row(rule, method, bound, UNKNOWN, result.seconds, result.error)
    if not result.found:
        return Row(rule, method, bound, NOT_REFUTED, result.seconds, "the planted bug was not found within the limit")
    detail = "; ".join(result.found)
    for args in result.calls(planted_contracts.FUNCTIONS[rule]):
        on_reference, on_planted = planted_contracts.replay(rule, args)
        detail += (f"\nreplayed {args}: reference {on_reference or 'keeps the contract'}; "
                   f"planted copy {on_planted or 'keeps the contract'}")
    return Row(rule, method, bound, BROKEN, result.seconds, detail)


RUNNERS: dict[str, Callable[[Options, Say], list[Row]]] = {
    "model": model_rows, "z3": z3_rows, "differential": differential_rows, "crosshair": crosshair_rows,
}


def run(options: Options, say: Say) -> list[Row]:
    rows: list[Row] = []
    for method in options.methods:
        rows += RUNNERS[method](options, say)
    return rows
