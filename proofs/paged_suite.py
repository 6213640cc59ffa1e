"""What `stallfree prove --scheduler paged` runs: the model check of a paged scheduler under the paged
monitor and invariants, as rows of the same table. With a paged rule's fault, the same check must
fail naming that rule. The Z3 theorems and the CrossHair contracts state the reservation design's
step; for the paged design they are rows marked not applicable, never rows that hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.faults.paged import PAGED_FAULTS, PagedFault
from stallfree.spec.paged.invariants import PAGED_INVARIANTS
from stallfree.spec.paged.rules import PAGED_RULE_IDS

from .explicit import paged
from .explicit.bounds import Bounds
from .explicit.snapshot import Hidden
from .suite import HIDDEN_UNDECLARED, HOLDS, UNKNOWN, Row

DEFAULT_BOUND = "2,2,6,3,3,3"  # preempts, with one stop or cancel per behaviour
FAULT_BOUNDS = {"PREEMPT-ORDER": "2,3,6,3,2,3"}  # a preempted request and a later arrival both waiting
FAULT_DEFAULT_BOUND = "2,2,6,2,3,3"


def fault(rule: str) -> type[PagedFault]:
    """The paged scheduler that breaks `rule` (the first listed in PAGED_FAULTS), or the one named `rule`
    (any case: `STOPIGNORED`); ValueError naming the rules and the faults that have one."""
    for f in PAGED_FAULTS:
        if f.breaks == rule:
            return f
    for f in PAGED_FAULTS:
        if f.__name__.upper() == rule.upper():
            return f
    broken = ", ".join(dict.fromkeys(f.breaks for f in PAGED_FAULTS))
    names = ", ".join(f.__name__ for f in PAGED_FAULTS)
    raise ValueError(f"no paged fault breaks {rule} or is named so; the paged faults break {broken} "
                     f"(by name: {names})")


def control_bound(rule: str) -> Bounds:
    """The bound at which the model check finds the fault `fault(rule)` selects (by rule or by name)."""
    selected = _fault_or_none(rule)
    return Bounds.parse(FAULT_BOUNDS.get(selected.breaks if selected else rule, FAULT_DEFAULT_BOUND))


def model_rows(bound: Bounds, factory: Callable[..., Any], max_states: int | None = None,
               hidden: Hidden | None = None, hidden_declared: bool = True) -> list[Row]:
    """The paged model check's rows. Its claims are refused (unknown) unless the scheduler's state
    outside the checker's key is declared (`hidden`, or none): merging states by key is sound only
    then. A counterexample found is reported either way: its path is concrete and replayed."""
    result = paged.check(bound, factory, max_states=max_states, hidden=hidden)
    label = f"{bound.label()}: {result.states:,} states"
    if result.counterexample is not None:
        ce = result.counterexample
        return [Row(ce.rule, "model check (paged)", label, result.verdict, result.seconds, ce.describe(),
                    {"workload": ce.workload.to_json(), "replayed": ce.replayed})]
    if result.verdict is not HOLDS:
        return [Row("ALL PAGED RULES", "model check (paged)", label, result.verdict, result.seconds,
                    "stopped at max_states")]
    if result.running_states == 0:
        return [Row("ALL PAGED RULES", "model check (paged)", label, UNKNOWN, result.seconds,
                    "vacuous: no request ever ran at this bound: the scheduler's pool refuses every shape "
                    "(NEVER-FIT); use smaller blocks (stallfree.paged:small_blocks) or a larger K")]
    if not hidden_declared:
        refused = HIDDEN_UNDECLARED
        return [Row("ALL PAGED RULES", "model check (paged)", label, UNKNOWN, result.seconds, refused),
                Row("PREEMPT-BOUND", "model check (liveness)", label, UNKNOWN, 0.0, refused)]
    return [
        Row("ALL PAGED RULES", "model check (paged)", label, result.verdict, result.seconds,
            f"{len(PAGED_RULE_IDS)} paged rules on every transition (adds, steps, a stop or cancel), "
            f"{len(PAGED_INVARIANTS)} paged invariants (LONE-BLOCK among them) in every state; "
            f"{result.transitions:,} transitions, {result.preempting_states} states reached by a preempting step"),
        Row("PREEMPT-BOUND", "model check (liveness)", label, result.verdict, 0.0,
            f"no cycle with work pending; every state drains within sum(prompt_len + max_new + 1) steps over its "
            f"live requests (at most {result.drain_bound} here); at most {result.max_preemptions} preemption(s) "
            "of one request seen"),
    ]


def z3_rows(fault_rule: str | None = None, num_requests: int | None = None) -> list[Row]:
    """The paged design's Z3 theorems: the arithmetic of NEVER-FIT (any block size, pool, watermark,
    request) and the step theorems over a symbolic paged step (`smt.paged_step`) of `num_requests`
    requests (`paged_step.PAGED_N` unless given). With a paged rule's fault, the theorems run on the
    wrong policy making the same mistake (NEVER-FIT: weakened), which Z3 must refute."""
    from .smt import paged as smt
    from .smt import paged_step

    n = paged_step.PAGED_N if num_requests is None else num_requests

    wrong = getattr(_fault_or_none(fault_rule), "__name__", None) if fault_rule is not None else None
    step_controls = [(t, c) for t in paged_step.THEOREMS for c in t.controls if c.__name__ == wrong]
    if fault_rule not in (None, "NEVER-FIT") and not step_controls:
        return [Row(fault_rule, "Z3", "-", f"n/a (no Z3 control for {fault_rule})", 0.0,
                    "no paged Z3 theorem has a wrong policy making this fault's mistake")]
    rows = []
    if fault_rule in (None, "NEVER-FIT"):
        for o in smt.controls() if fault_rule else smt.theorems():
            detail = "any block size, pool, watermark, prompt_len, max_new" if o.verdict is HOLDS else o.counterexample
            rows.append(Row(o.claim, "Z3 (paged arithmetic)", "unbounded", o.verdict, o.seconds, detail))
    if fault_rule is None:
        outcomes = paged_step.theorems(n)
    else:
        outcomes = [paged_step.prove(t, control(), n) for t, control in step_controls]
    sizes = ",".join(map(str, paged_step.BLOCK_SIZES))
    for x in outcomes:
        detail = (f"any budget, slots, pool, watermark, lengths; block sizes {sizes}" if x.verdict is HOLDS
                  else x.counterexample or "the solver ran out of time: nothing proved")
        rows.append(Row(x.theorem, f"Z3 paged step ({x.policy})", f"N={n}", x.verdict, x.seconds,
                        detail))
    return rows


def _fault_or_none(rule: str) -> type[PagedFault] | None:
    try:
        return fault(rule)
    except ValueError:
        return None


CONTRACTS = "stallfree.proofs.contracts.paged_contracts"
CONTRACT_CLAIMS = {"paged_add_accepts_exactly_what_fits": "NEVER-FIT",
                   "paged_lone_request_runs_to_its_end": "LONE-BLOCK, BLOCKS"}
PLANTED = {"NEVER-FIT": "planted_never_fit", "BLOCKS": "planted_blocks"}  # a paged fault under the same asserts
CROSSHAIR_S = 4.0


def crosshair_rows(fault_rule: str | None = None, seconds: float = CROSSHAIR_S) -> list[Row]:
    """CrossHair on the paged contracts (never a proof: not refuted within the limit); with a fault,
    on the same postconditions run on that paged fault, which it must break."""
    from .contracts import run as crosshair_run

    if fault_rule is not None and fault_rule not in PLANTED:
        return [Row(fault_rule, "CrossHair (paged)", "-", f"n/a (no paged contract for {fault_rule})", 0.0,
                    f"the paged contracts state {', '.join(PLANTED)}")]
    targets = {PLANTED[fault_rule]: fault_rule} if fault_rule else CONTRACT_CLAIMS
    rows = []
    for function, claim in targets.items():
        result = crosshair_run.check(f"{CONTRACTS}.{function}", seconds)
        bound = f"{seconds:g} s/condition"
        if result.error is not None:
            rows.append(Row(claim, "CrossHair (paged)", bound, result.verdict, result.seconds, result.error))
        elif result.found:
            rows.append(Row(claim, "CrossHair (paged)", bound, result.verdict, result.seconds, "; ".join(result.found)))
        else:
            rows.append(Row(claim, "CrossHair (paged)", bound, result.verdict, result.seconds,
                            f"{function}: no counterexample within the limit (CrossHair never proves)"))
    return rows


PAGED_RANDOM_STATES = 300  # states of random workloads the paged differential compares


def differential_rows(factory: Callable[..., Any], states: int = PAGED_RANDOM_STATES) -> list[Row]:
    """The symbolic paged step (`smt.paged_step`) against `factory`'s code on random states
    (`smt.paged_refinement`): what ties the paged Z3 step theorems to the scheduler."""
    from .smt import paged_refinement

    name = getattr(factory, "__name__", str(factory))
    claim, method = f"Z3 PAGED STEP = {name}", "differential (random states)"
    try:
        found = paged_refinement.on_random_states(states, factory)
    except (AttributeError, TypeError) as error:
        return [Row(claim, method, "-", UNKNOWN, 0.0,
                    f"not judged: the scheduler does not show what the comparison reads ({error})")]
    bound = f"{found.states:,} random states"
    if found.difference is not None:
        return [Row(claim, method, bound, found.verdict, found.seconds, found.difference)]
    return [Row(claim, method, bound, found.verdict, found.seconds,
                f"the Z3 paged step planned, preempted, emitted and left what the code did in {found.states:,} "
                f"states of {found.workloads} workloads ({found.preempting} of them preempting), with "
                f"{found.cancels} cancels (before schedule() or with the plan pending) and {found.stops} stops")]


def not_applicable(methods: tuple[str, ...]) -> list[Row]:
    return [Row(m.upper(), m, "-", "n/a (states the reservation design's step)", 0.0,
                "the reservation design's variants; none is written for the paged design")
            for m in methods if m not in ("model", "z3", "crosshair", "differential")]
