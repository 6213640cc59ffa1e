"""What `stallfree prove` runs: the model checker, every Z3 theorem, the differential check that ties
the Z3 step to the reference, and CrossHair on the contracts. Each yields rows of one table: claim
(rule ID), method, bound, result, seconds, and what went wrong.

The Z3 side (`smt`, and the controls built on it) is imported by the methods that use it, so that the
model check runs where z3-solver is not installed (`pip install stallfree[plot]` and
`stallfree prove --methods model`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from stallfree.reference import Scheduler
from stallfree.spec import CANCEL, RULE_IDS, STOP, supports
from stallfree.spec.reservation.invariants import INVARIANTS
from stallfree.spec.verdict import Verdict

from .contracts import planted, planted_contracts, planted_lifecycle
from .contracts import run as crosshair_run
from .explicit import coverage, modelcheck, starvation
from .explicit.bounds import Bounds
from .explicit.counterexample import replay
from .explicit.snapshot import Hidden

if TYPE_CHECKING:
    from .smt import refinement
    from .smt.policy import Policy

HOLDS, NOT_REFUTED, BROKEN, UNKNOWN = Verdict.HOLDS, Verdict.NOT_REFUTED, Verdict.BROKEN, Verdict.UNKNOWN
NOT_JUDGED = Verdict.NOT_JUDGED
# Why a model check's claims read unknown for a scheduler whose hidden state is not declared (either design).
HIDDEN_UNDECLARED = ("refused: states with one key were merged, which is sound only if the scheduler decides on "
                     "nothing the key leaves out; declare its hidden state (--hidden MODULE:FUNCTION, or "
                     "--hidden none)")
METHODS = ("model", "symbolic", "z3", "differential", "crosshair", "variants", "quint")
DEFAULT_BOUND = "2,3,8,4,3,3"  # S > B, so READY-WITHIN-BUDGET can fail; M = 3
# The default's second bound, where the cases S > B rules out are reached (see `coverage`): with S <= B the
# waiting head is refused for want of a slot, and B = 3 admits three in one step. Every claim's case is
# reached at one of the two bounds (docs/proofs.md, the vacuity table).
COVERAGE_BOUND = "3,3,9,4,4,2"
LIVENESS_BOUND = "2,2,8,2,3,2"  # B,S,K, at most 2 waiting at once (arrivals never stop), P, M
LIVENESS_METHOD = "model check (lassos, WF Step)"  # `explicit.starvation`
VACUOUS_METHOD = "model check (vacuous here)"  # a claim whose case the model check never reached at that bound
RANDOM_STATES = 10_000  # states of random workloads the differential compares (see smt.refinement)
RANDOM_CANCELS = 300  # cancels of random workloads the cancel differential compares (smt.cancel_refinement)
# `stallfree prove --profile deep`: every figure a step up (several minutes)
DEEP_BOUND, DEEP_LIVENESS_BOUND, DEEP_REQUESTS, DEEP_RANDOM_STATES = "2,3,8,5,3,3", "2,3,8,2,3,3", 16, 100_000
DEEP_CANCEL_REQUESTS, DEEP_RANDOM_CANCELS = 12, 3_000

Say = Callable[[str], None]
# A piece of a method's rows, named (`suite_jobs` orders pieces by their names' costs): the rows of a
# method are its pieces' rows in order (`run_parts`), in one process or spread over several.
Part = tuple[str, Callable[["Options", Say], list["Row"]]]


def with_z3_defaults(o: Options) -> Options:
    """`o` with the Z3 side's defaults filled in (the reference's policy, the theorems' N), importing
    z3: called by the methods that use it, never by the model check."""
    from .smt.cancels import CANCEL_N
    from .smt.policy import Policy
    from .smt.theorems import DEFAULT_N

    if o.policy is None:
        o.policy = Policy()
    if o.num_requests is None:
        o.num_requests = DEFAULT_N
    if o.cancel_requests is None:
        o.cancel_requests = CANCEL_N
    return o


@dataclass(slots=True)
class Row:
    claim: str
    method: str
    bound: str
    result: Verdict | str  # a verdict; a str only for a row that is not applicable ("n/a (why)")
    seconds: float
    detail: str = ""
    counterexample: dict[str, Any] | None = field(default=None)
    coverage: list[dict[str, Any]] | None = field(default=None)  # a model check's cases and their counts

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
    policy: Policy | None = None  # the Z3 policy; None: the reference's (see with_z3_defaults)
    num_requests: int | None = None  # symbolic requests in each theorem; None: the theorems' default
    crosshair_target: str = crosshair_run.CONTRACTS
    fault_rule: str | None = None  # CrossHair runs the copy with this rule's bug planted instead
    crosshair_seconds: float = crosshair_run.PER_CONDITION_S
    methods: tuple[str, ...] = METHODS
    max_states: int | None = None
    model_states: refinement.DifferentialResult | None = None  # the differential on the model check's states, once run
    # Whether the scheduler's state outside the checker's key is declared (`hidden`, or none). The
    # reference is shown to have none (tests); another scheduler must say, or its claims are refused.
    hidden_declared: bool = True
    rules: tuple[str, ...] | None = None  # the rules the model check judges (None: all)
    liveness_bound: Bounds = field(default_factory=lambda: Bounds.parse(LIVENESS_BOUND))
    random_states: int = RANDOM_STATES
    cancel_requests: int | None = None  # symbolic requests in each cancel theorem; None: their default
    random_cancels: int = RANDOM_CANCELS
    code_requests: int | None = None  # requests per state of the code theorems; None: code_suite's defaults
    deep: bool = False  # --profile deep
    # A second bound model-checked with the first (None: the first alone), where its vacuous cases are reached.
    coverage_bound: Bounds | None = field(default_factory=lambda: Bounds.parse(COVERAGE_BOUND))
    jobs: int = 1  # worker processes the methods run in (`suite_jobs`); the rows are the same for any number


def model_rows(o: Options, say: Say) -> list[Row]:
    rows = _safety_rows(o, o.bound, say)
    if any(r.failed for r in rows):  # a scheduler that breaks a rule, or raises, is not run again
        return [*rows, Row(starvation.LIVENESS, LIVENESS_METHOD, o.liveness_bound.label(), NOT_JUDGED, 0.0,
                           "not judged: the model check above failed first")]
    if not o.bound.lifecycle and _supports_both(o):
        # Again with stops and cancels: the same states, every stop and cancel transition between them.
        rows += _safety_rows(o, replace(o.bound, lifecycle=True), say, differential=False)
    if o.coverage_bound is not None and o.coverage_bound != o.bound and not any(r.failed for r in rows):
        second = _safety_rows(o, o.coverage_bound, say, differential=False)
        if any(r.claim == "COVERAGE" and r.result == HOLDS for r in second):
            for row in rows:
                if row.method == VACUOUS_METHOD:  # vacuous at the first bound, exercised at the second
                    head, newline, table = row.detail.partition("\n")
                    row.detail = f"{head}; every case reached at {o.coverage_bound.label()} (its COVERAGE row)" \
                                 f"{newline}{table}"
        rows += second
    return [*rows, liveness_row(o, say)]


def _supports_both(o: Options) -> bool:
    cfg = o.bound.config
    return supports(o.factory(token_budget=cfg.token_budget, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)) == {
        STOP, CANCEL}


def liveness_row(o: Options, say: Say) -> Row:
    """The per-request bound under never-ending arrivals (`explicit.starvation`)."""
    say(f"model check: LIVENESS at {o.liveness_bound.label()}, arrivals never stop")
    result = starvation.check(o.liveness_bound, o.factory, o.max_states, o.hidden)
    bound = f"{o.liveness_bound.label()}: {result.states:,} states"
    method = LIVENESS_METHOD
    if result.counterexample is not None:
        ce = result.counterexample
        return Row(starvation.LIVENESS, method, bound, result.verdict, result.seconds, ce.describe(),
                   {"workload": ce.workload.to_json()})
    if result.verdict is not HOLDS:
        return Row(starvation.LIVENESS, method, bound, result.verdict, result.seconds, "stopped at max_states")
    if not o.hidden_declared:
        return Row(starvation.LIVENESS, method, bound, UNKNOWN, result.seconds,
                   "refused: declare the scheduler's hidden state (--hidden MODULE:FUNCTION, or --hidden none)")
    return Row(starvation.LIVENESS, method, bound, result.verdict, result.seconds,
               f"every request finished within floor(P / B) + D steps of its arrival (P prompt positions, D "
               f"tokens of it and the requests ahead of it then), under arrivals that never stop (at most "
               f"{o.liveness_bound.num_requests} waiting); tightest margin {result.worst_margin} step(s)")


def _safety_rows(o: Options, bounds: Bounds, say: Say, differential: bool = True) -> list[Row]:
    def progress(states: int, transitions: int, depth: int, seconds: float) -> None:
        say(f"model check: {states:,} states, {transitions:,} transitions, depth {depth}, {seconds:.0f} s")

    on_model = differential and "differential" in o.methods and o.fault_rule is None
    inspector = None
    if on_model:
        from .smt import refinement

        inspector = refinement.OnModelStates(with_z3_defaults(o).policy)
    result = modelcheck.check(bounds, o.factory, o.hidden, o.max_states, progress, inspector, o.rules, compact=True)
    if inspector is not None:  # the differential's first half, done on the same pass
        o.model_states = inspector.outcome(result)
    bound = f"{bounds.label()}: {result.states:,} states"
    figures = (f"{result.states:,} states, {result.transitions:,} transitions, depth {result.depth}, "
               f"{result.states_per_second:,.0f} states/s")
    if result.counterexample is not None:
        ce = result.counterexample
        return [Row(ce.rule, "model check", bound, result.verdict, result.seconds, ce.describe(),
                    {"workload": ce.workload.to_json(), "replayed": ce.replayed})]
    if result.verdict is not HOLDS:
        return [Row("ALL RULES", "model check", bound, result.verdict, result.seconds,
                    f"stopped at max_states; {figures}")]
    actions = "adds, steps, stops and cancels" if bounds.lifecycle else "adds and steps"
    if not o.hidden_declared:
        refused = f"{HIDDEN_UNDECLARED}; {figures}"
        return [Row("ALL RULES", "model check", bound, UNKNOWN, result.seconds, refused),
                Row("PROGRESS", "model check (liveness)", bound, UNKNOWN, 0.0, refused)]
    rows = [
        Row("ALL RULES", "model check", bound, result.verdict, result.seconds,
            f"{len(RULE_IDS)} rules on every transition ({actions}), {len(INVARIANTS)} state invariants in every "
            f"state; {figures}"),
        Row("PROGRESS", "model check (liveness)", bound, result.verdict, 0.0,
            f"no cycle with work pending; longest behaviour {result.longest_steps} steps; "
            f"any state finishes its work within {result.drain_bound} steps"),
    ]
    return rows + coverage_rows(result, bound)


def coverage_rows(result: modelcheck.CheckResult, bound: str) -> list[Row]:
    """The model check's coverage (`explicit.coverage`): one row holding if every claim's cases were
    reached (or excluded by an invariant), else one `not judged` row per claim vacuous at this bound."""
    report = result.coverage
    if report is None:
        return []
    cases = [r.to_json() for r in report]
    lines = "\n".join(r.line() for r in report)
    vacuous = coverage.vacuous_claims(report)
    if not vacuous:
        reached = sum(r.status == coverage.REACHED for r in report)
        return [Row("COVERAGE", "model check (coverage)", bound, HOLDS, 0.0,
                    f"every claim's cases reached ({reached} cases; the others excluded by an invariant or not "
                    f"run):\n{lines}", coverage=cases)]
    rows = []
    for claim in vacuous:
        never = "; ".join(r.case for r in report if r.claim == claim and r.status == coverage.VACUOUS)
        table = f"\nthe cases at this bound:\n{lines}" if not rows else ""
        rows.append(Row(claim, VACUOUS_METHOD, bound, NOT_JUDGED, 0.0,
                        f"vacuous at this bound: {never}: never reached, so the rule was judged only where it "
                        f"could not fail{table}", coverage=cases))
    return rows


def z3_rows(o: Options, say: Say) -> list[Row]:
    return run_parts(z3_parts(o), o, say)


def z3_parts(o: Options) -> list[Part]:
    """The Z3 theorems' rows in pieces, each theorem (or a few small ones) apart: `suite_jobs` spreads
    them over its workers; the serial run takes them in this order."""
    from .smt.chain import CHAINS
    from .smt.induction import INDUCTIONS
    from .smt.liveness_induction import LIVENESS_INDUCTIONS
    from .smt.liveness_steps import LIVENESS_STEPS
    from .smt.theorems import THEOREMS

    o = with_z3_defaults(o)
    parts: list[Part] = [(f"z3 {t.name}", partial(_z3_theorem_rows, theorem=t)) for t in (*THEOREMS, LIVENESS_STEPS)]
    parts.append(("z3 loops", _z3_loop_rows))
    if o.policy.name == "reference":  # the ends are proved of the reference's invariant and step
        parts.append(("z3 ends", _z3_end_rows))
    parts.append(("z3 cancels", cancel_rows))
    parts.append(("z3 FOLD", _z3_fold_rows))
    parts += [(f"z3 {i.name}", partial(_z3_induction_rows, induction=i)) for i in (*INDUCTIONS, *CHAINS)]
    return parts + [(f"z3 {i.name}", _z3_liveness_rows) for i in LIVENESS_INDUCTIONS]


def run_parts(parts: list[Part], o: Options, say: Say) -> list[Row]:
    """A method's rows: its parts' rows in their order."""
    return [row for _, part in parts for row in part(o, say)]


def _z3_theorem_rows(o: Options, say: Say, theorem: Any) -> list[Row]:
    from .controls import twin_fault
    from .smt.reach import reach
    from .smt.theorems import prove

    say(f"z3: {theorem.name} ({o.policy.name}, N={o.num_requests})")
    outcome = prove(theorem, o.policy, o.num_requests)
    row = _z3_row(theorem.name, f"Z3 inductive step ({o.policy.name})", f"N={o.num_requests}", outcome)
    if outcome.verdict is BROKEN:
        say(f"z3: {theorem.name}: searching for a workload that reaches the counterexample")
        workload = reach(theorem, o.policy)
        if workload is not None:
            row.detail += f"\nreached from a new scheduler by the workload: {workload.dumps()}"
            row.counterexample = {**(row.counterexample or {}), "workload": workload.to_json()}
            twin = twin_fault(o.policy)
            if twin is not None:
                row.detail += f"\nreplayed on faults.{twin.__name__} under the monitor: {replay(workload, twin)}"
    return [row]


def _z3_loop_rows(o: Options, say: Say) -> list[Row]:
    from .smt.loops import LOOP_THEOREMS, prove_loop

    rows = []
    for loop in LOOP_THEOREMS:
        say(f"z3: {loop.name} ({o.policy.name})")
        rows.append(_z3_row(loop.name, f"Z3 loop iteration ({o.policy.name})", "any N", prove_loop(loop, o.policy)))
    return rows


def _z3_end_rows(o: Options, say: Say) -> list[Row]:
    from .smt import ends

    say(f"z3: END and STOP-READY (N={o.num_requests})")
    return [_z3_row("END (stops, ready cancels)", "Z3 inductive end", f"N={o.num_requests}",
                    ends.prove_end(o.num_requests)),
            _z3_row("STOP-READY", "Z3 inductive step", f"N={o.num_requests}",
                    ends.prove_stops_end_ready(o.num_requests))]


def _z3_induction_rows(o: Options, say: Say, induction: Any) -> list[Row]:
    from .smt.induction import prove_induction

    say(f"z3: {induction.name} ({o.policy.name})")
    row = _z3_row(induction.name, f"Z3 loop induction ({o.policy.name})", "any N", prove_induction(induction, o.policy))
    row.detail = f"{induction.rules}: initiation, consecution, exit" + (f"; {row.detail}" if row.detail else "")
    return [row]


def _z3_liveness_rows(o: Options, say: Say) -> list[Row]:
    """LIVENESS-STEPS (induction, phases chained), then LIVENESS (induction, any N) from its result
    (`smt.liveness_any_n`): the ranking is proved once, the bound from it in the second row."""
    from .smt import liveness_any_n
    from .smt.induction import prove_induction

    steps = liveness_any_n.STEPS
    say(f"z3: {steps.name} ({o.policy.name})")
    ranked = prove_induction(steps, o.policy)
    row = _z3_row(steps.name, f"Z3 loop induction ({o.policy.name})", "any N", ranked)
    row.detail = f"{steps.rules}: initiation, consecution, exit" + (f"; {row.detail}" if row.detail else "")
    say(f"z3: {liveness_any_n.NAME} ({o.policy.name})")
    bound = liveness_any_n.prove(o.policy, ranked, premises={})  # its premise rows: `settle_liveness`
    return [row, Row(liveness_any_n.NAME, f"Z3 step induction ({o.policy.name})", "any N", bound.verdict,
                     bound.seconds, bound.detail, bound.counterexample)]


def _z3_fold_rows(o: Options, say: Say) -> list[Row]:
    return [fold_row(o, say)]


def fold_row(o: Options, say: Say) -> Row:
    """FOLD for any N (`smt.fold_induction`): the premise the loop inductions after it check at N = 3."""
    from .smt import fold_induction

    o = with_z3_defaults(o)
    say(f"z3: {fold_induction.NAME} ({o.policy.name})")
    outcome = fold_induction.prove(o.policy)
    row = _z3_row(fold_induction.NAME, f"Z3 loop induction ({o.policy.name})", "any N", outcome)
    return replace(row, detail=outcome.detail + (f"\n{row.detail}" if outcome.verdict is BROKEN else ""))


def cancel_rows(o: Options, say: Say) -> list[Row]:
    """The cancel theorems (`smt.cancels`) of the reference; with `--fault RULE`, their negative
    controls made to break RULE (a wrong cancel step or a wrong policy), which must be refuted."""
    from .smt import cancels

    n = with_z3_defaults(o).cancel_requests
    if o.fault_rule is None:
        if o.policy.name != "reference":
            return []
        say(f"z3: the cancel theorems (N={n})")
        outcomes = cancels.theorems(n)
    else:
        outcomes = cancels.controls(n, o.fault_rule)
    return [_z3_row(x.theorem, f"Z3 cancel ({x.policy})", f"N={n}", x) for x in outcomes]


def _z3_row(claim: str, method: str, bound: str, outcome: Any) -> Row:
    """A Z3 theorem's row: its outcome's verdict, and what stands behind it (the counterexample's state;
    for unknown, why nothing was proved)."""
    result = outcome.verdict
    detail = "" if outcome.counterexample is None else f"counterexample state: {outcome.counterexample}"
    if result == NOT_JUDGED and "reason" in (outcome.counterexample or {}):  # `smt.phase_guard`: phases unread
        detail = outcome.counterexample["reason"]
    if result == UNKNOWN:
        why = outcome.counterexample or {}
        if "premise" in why:  # `smt.fold`: the theorem is about another policy than this one
            detail = f"{why['obligation']}: premise {why['premise']}: nothing proved"
        elif "vacuous" in why:
            detail = f"{why['obligation']}: {why['vacuous']}: nothing proved"
        elif "foreign writes" in why:  # `smt.phase_guard`: a phase writes another's plan entry
            detail = f"{why['obligation']}: {why['reason']}: nothing proved"
        else:
            detail = "the solver ran out of time: nothing proved"
    return Row(claim, method, bound, result, outcome.seconds, detail, outcome.counterexample)


def differential_rows(o: Options, say: Say) -> list[Row]:
    """The Z3 step against the scheduler's code: on every state the model checker reaches at the
    bound, then on `random_states` states of random workloads of up to 64 requests."""
    return run_parts(differential_parts(o), o, say)


def differential_parts(o: Options) -> list[Part]:
    """The differential's pieces; the first reads the model check's states (`Options.model_states`),
    so `suite_jobs` runs it after the model check, in its worker."""
    return [("differential model states", _model_states_rows), ("differential random", _random_states_rows),
            ("differential cancels", cancel_differential_rows)]


def _model_states_rows(o: Options, say: Say) -> list[Row]:
    from .smt import refinement

    o = with_z3_defaults(o)
    factory, name = _compared(o)
    found = o.model_states
    if found is None:
        say(f"differential: the Z3 step on every state of the model check at {o.bound.label()}")
        found = refinement.on_model_states(o.bound, factory, o.hidden if factory is o.factory else None, o.policy,
                                           o.max_states)
    return [_differential_row(f"Z3 STEP = {name}", f"{_differential_method(o)} (model states)",
                              f"{o.bound.label()}: {found.states:,} states", found)]


def _random_states_rows(o: Options, say: Say) -> list[Row]:
    from .smt import refinement

    o = with_z3_defaults(o)
    factory, name = _compared(o)
    say(f"differential: the Z3 step on {o.random_states:,} random states")
    found = refinement.on_random_states(o.random_states, factory, o.policy, say=say)
    return [_differential_row(f"Z3 STEP = {name}", f"{_differential_method(o)} (random states)",
                              f"{found.states:,} random states", found)]


def _differential_method(o: Options) -> str:
    return "differential" if o.policy.name == "reference" else f"differential, {o.policy.name}"


def cancel_differential_rows(o: Options, say: Say) -> list[Row]:
    """The Z3 cancel step against the code's cancel(rid) on random cancels; with `--fault RULE`, the
    wrong cancel step made to break RULE, which must differ (none for a rule no cancel step breaks)."""
    from .smt import cancel_refinement, cancels

    wrong = None if o.fault_rule is None else cancels.CANCEL_CONTROLS.get(o.fault_rule)
    if o.fault_rule is not None and wrong is None:
        return []
    factory, name = _compared(o)
    if CANCEL not in supports(factory(token_budget=1, max_seqs=1, kv_tokens=1)):
        return []
    step = cancels.CancelStep() if wrong is None else wrong()
    method = "differential (random cancels)" if wrong is None else f"differential, {step.name} (random cancels)"
    say(f"differential: the Z3 cancel step on {o.random_cancels:,} random cancels")
    found = cancel_refinement.on_random_cancels(o.random_cancels, factory, step)
    bound = f"{found.cancels:,} random cancels"
    if found.difference is not None:
        return [Row(f"Z3 CANCEL = {name}", method, bound, found.verdict, found.seconds, found.difference)]
    return [Row(f"Z3 CANCEL = {name}", method, bound, found.verdict, found.seconds,
                f"the Z3 cancel step left what the code's cancel did in {found.cancels:,} cancels of "
                f"{found.workloads} workloads (waiting, partial and ready requests)")]


def _compared(o: Options) -> tuple[Callable[..., Any], str]:
    """The code a differential compares the Z3 step with, and its name. A negative control tells the
    wrong Z3 step apart from the reference's code, so it always runs on the reference."""
    factory = Scheduler if o.fault_rule is not None else o.factory
    return factory, "REFERENCE" if factory is Scheduler else getattr(factory, "__name__", str(factory))


def _differential_row(claim: str, method: str, bound: str, found: refinement.DifferentialResult) -> Row:
    if found.verdict is UNKNOWN:
        return Row(claim, method, bound, found.verdict, found.seconds,
                   f"partial: the model check stopped at max_states; {found.states:,} states agreed")
    if found.verdict is HOLDS:
        return Row(claim, method, bound, found.verdict, found.seconds,
                   f"the Z3 step planned, emitted and left what the code did in {found.states:,} states "
                   f"(up to {found.most_admitted} admissions in one step)")
    ce = found.counterexample
    detail = found.difference if ce is None else f"{found.difference}\n{ce.describe()}"
    counterexample = None if ce is None else {"workload": ce.workload.to_json()}
    return Row(claim, method, bound, found.verdict, found.seconds, detail, counterexample)


def crosshair_rows(o: Options, say: Say) -> list[Row]:
    """One row per contract: each `crosshair check`ed on its own (with `--fault`, the planted copy)."""
    return run_parts(crosshair_parts(o), o, say)


def crosshair_parts(o: Options) -> list[Part]:
    """CrossHair's rows in pieces, one contract (one `crosshair check`) each; with `--fault`, one piece."""
    if o.fault_rule is not None:
        return [("crosshair planted", _planted_rows)]
    if o.crosshair_target != crosshair_run.CONTRACTS:  # one target named by the caller
        return [("crosshair target", partial(_contract_rows, claim="CONTRACTS", target=o.crosshair_target))]
    parts: list[Part] = [(f"crosshair {kind}", partial(_contract_rows, claim=f"{kind} contract", rules=rules,
                                                       target=f"{o.crosshair_target}.{contract.__name__}"))
                         for kind, contract, rules in planted_contracts.KINDS]
    return parts + [(f"crosshair {c.claim}", partial(_contract_rows, claim=c.claim, rules=c.rules,
                                                     target=planted_lifecycle.target(c.reference)))
                    for c in planted_lifecycle.CONTRACTS]


def _contract_rows(o: Options, say: Say, claim: str, target: str, rules: tuple[str, ...] = ()) -> list[Row]:
    return [_crosshair_row(claim, target, o.crosshair_seconds, say, rules)]


def _planted_rows(o: Options, say: Say) -> list[Row]:
    """CrossHair with `--fault RULE`: the planted copies that break RULE."""
    lifecycle = [planted_lifecycle_row(contract, o.crosshair_seconds, say)
                 for contract in planted_lifecycle.CONTRACTS if contract.rule == o.fault_rule]
    if lifecycle and o.fault_rule not in planted_contracts.TARGETS:
        return lifecycle
    return [planted_row(o.fault_rule, o.crosshair_seconds, say), *lifecycle]


def _crosshair_row(claim: str, target: str, seconds: float, say: Say, rules: tuple[str, ...] = ()) -> Row:
    say(f"crosshair: {target}, {seconds:g} s per condition")
    result = crosshair_run.check(target, seconds)
    bound = f"{seconds:g} s/condition"
    states = f"{', '.join(rules)}: " if rules else ""
    if result.error is not None:
        return Row(claim, "CrossHair", bound, result.verdict, result.seconds, result.error)
    if result.found:
        return Row(claim, "CrossHair", bound, result.verdict, result.seconds, states + "; ".join(result.found))
    return Row(claim, "CrossHair", bound, result.verdict, result.seconds,
               f"{states}no counterexample within the limit (CrossHair never proves)")


def planted_row(rule: str, seconds: float, say: Say) -> Row:
    """CrossHair on the copy of the reference with `rule`'s bug planted: the contract stating `rule`
    must be broken, by a counterexample that the reference's own contract keeps."""
    target = planted_contracts.TARGETS.get(rule)
    if target is None:
        return Row(rule, "CrossHair", "-", f"n/a (no contract for {rule})", 0.0,
                   "no CrossHair contract states this rule")
    return _planted_found(rule, f"CrossHair ({planted.PLANTED[rule].__name__})", target,
                          planted_contracts.FUNCTIONS[rule], lambda args: planted_contracts.replay(rule, args),
                          seconds, say)


def planted_lifecycle_row(contract: planted_lifecycle.PlantedContract, seconds: float, say: Say) -> Row:
    """CrossHair on a stop or cancel contract run on its planted copy: it must be broken, by a
    counterexample that the reference's own contract keeps."""
    rule, planted = contract.rule, contract.planted
    return _planted_found(rule, f"CrossHair ({planted_lifecycle.PLANTED[rule].__name__}, {contract.claim})",
                          planted_lifecycle.target(planted), planted.__name__,
                          lambda args: planted_contracts.replay_on((contract.reference, planted), args), seconds, say)


def _planted_found(rule: str, method: str, target: str, function: str,
                   replay: Callable[[tuple[int, ...]], tuple[str | None, str | None]], seconds: float,
                   say: Say) -> Row:
    say(f"crosshair: {target}, {seconds:g} s per condition")
    result = crosshair_run.check(target, seconds)
    bound = f"{seconds:g} s/condition"
    if result.error is not None:
        return Row(rule, method, bound, result.verdict, result.seconds, result.error)
    if not result.found:
        return Row(rule, method, bound, result.verdict, result.seconds,
                   "the planted bug was not found within the limit")
    detail = "; ".join(result.found)
    for args in result.calls(function):
        on_reference, on_planted = replay(args)
        detail += (f"\nreplayed {args}: reference {on_reference or 'keeps the contract'}; "
                   f"planted copy {on_planted or 'keeps the contract'}")
    return Row(rule, method, bound, result.verdict, result.seconds, detail)


def variants_rows(o: Options, say: Say) -> list[Row]:
    from .variant_rows import rows  # the variants' contracts (docs/variants.md)

    if o.fault_rule is not None:  # --fault runs the reference's controls; the variants' are in their rows
        return []
    return rows(Row, say, o.deep)


def quint_rows(o: Options, say: Say) -> list[Row]:
    from .quint import rows  # the Quint spec (proofs/quint/, needs node and Quint)

    return rows.rows(Row, o.fault_rule, say)


def symbolic_rows(o: Options, say: Say) -> list[Row]:
    from .code_suite import code_rows

    return code_rows(o, say)


def symbolic_parts(o: Options) -> list[Part]:
    from .code_suite import code_parts

    return code_parts(o)


RUNNERS: dict[str, Callable[[Options, Say], list[Row]]] = {
    "model": model_rows, "symbolic": symbolic_rows, "z3": z3_rows, "differential": differential_rows,
    "crosshair": crosshair_rows, "variants": variants_rows, "quint": quint_rows,
}
# The methods whose rows come in pieces (`run_parts`), which `suite_jobs` spreads over its workers.
PARTS: dict[str, Callable[[Options], list[Part]]] = {
    "symbolic": symbolic_parts, "z3": z3_parts, "differential": differential_parts, "crosshair": crosshair_parts,
}


def run(options: Options, say: Say) -> list[Row]:
    """Every method's rows, in the order of `options.methods`; with `jobs` > 1, from worker processes.
    Then the rows that rest on other rows of the run are settled from them (`settle_liveness`)."""
    return settle_liveness(_rows(options, say))


def _rows(options: Options, say: Say) -> list[Row]:
    if options.jobs > 1:
        from . import suite_jobs

        parts = {method: PARTS[method](options) for method in set(options.methods) if method in PARTS}
        if len(suite_jobs.units(options.methods, parts)) > 1:
            return suite_jobs.run(options, say, RUNNERS, options.jobs, parts)
    rows: list[Row] = []
    for method in options.methods:
        rows += RUNNERS[method](options, say)
    return rows


LIVENESS_ANY_N = "LIVENESS (induction, any N)"  # `smt.liveness_any_n.NAME`, named here so no run imports Z3 for it


def settle_liveness(rows: list[Row]) -> list[Row]:
    """LIVENESS (induction, any N) holds only if its premise rows (`liveness_any_n.PREMISES`, the Z3
    rows of this run, so of its policy) hold: its row, written before they were in, is judged again
    from them; a premise row the run did not make leaves it unknown, naming it."""
    if not any(row.claim == LIVENESS_ANY_N for row in rows):
        return rows  # no such row (the model check alone, say): Z3 need not even be importable
    from .smt import liveness_any_n

    for row in rows:
        if row.claim == liveness_any_n.NAME and isinstance(row.result, Verdict):
            policy = row.method[row.method.rfind("("):]  # "(reference)": the premise rows must be of it
            z3_rows = {r.claim: r.result for r in rows if r.method.startswith("Z3") and r.method.endswith(policy)
                       and isinstance(r.result, Verdict)}
            was = liveness_any_n.Outcome(row.result, row.seconds, row.detail, row.counterexample)
            now = liveness_any_n.settle(was, z3_rows)
            row.result, row.detail, row.counterexample = now.verdict, now.detail, now.counterexample
    return rows
