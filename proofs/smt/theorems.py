"""The Z3 theorems, each named by the rule it proves, and how to prove one or find its counterexample.

Each step theorem says: for any budget, slots and capacity, and any state of N requests that
satisfies the invariant, after any adds one step of the policy yields a plan that obeys the rule and
a state where the rule's part of the invariant holds. Lengths, budget and capacity are unbounded
integers; N is the bound. INIT is the base case; INVARIANT is the whole invariant carried by a step.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import z3

from stallfree.spec.verdict import Verdict

from . import claims, lemmas
from .claims import Claim
from .in_turn import prove_in_turn
from .inductive import PARTS, invariant
from .lemmas import Lemmas
from .policy import Policy, SymStep
from .symbolic import SymConfig, SymState, smallest, value

DEFAULT_N = 12  # symbolic requests per theorem
TIMEOUT_MS = 120_000  # per theorem: past it the result is `unknown`, never `holds`


@dataclass(frozen=True, slots=True)
class Theorem:
    name: str  # the rule ID it proves
    claim: Claim  # what it claims of one step
    parts: tuple[str, ...]  # the invariant's parts it proves hold after the step
    control: str  # the mutant (`mutants.MUTANTS`) it must fail on
    lemmas: tuple[Lemmas, ...] = ()  # facts proved first, then assumed (see `lemmas`)


def _state_only(t: SymStep) -> z3.BoolRef:
    """A state invariant: nothing is claimed of the plan itself."""
    return z3.BoolVal(True)


THEOREMS: tuple[Theorem, ...] = (
    Theorem("INIT", _state_only, tuple(PARTS), "LeakyStart"),
    Theorem("BUDGET", claims.budget, (), "FreeDecodes"),
    Theorem("ONE-ENTRY", claims.one_entry, (), "AdmitWithoutBudget"),
    Theorem("SLOTS", claims.slots, ("SLOTS",), "IgnoreSlots"),
    Theorem("KV", claims.kv, ("KV",), "IgnoreKV", (lemmas.kv_per_slot,)),
    Theorem("PREFILL-ONCE", claims.prefill_once, ("TYPES",), "RepeatPosition"),
    Theorem("FIRST-TOKEN", claims.first_token, ("FIRST-TOKEN",), "LateFirstToken"),
    Theorem("TOKENS", claims.tokens, ("TYPES",), "DoubleFirstToken"),
    Theorem("FCFS", claims.fcfs, ("FCFS",), "SkipAhead"),
    Theorem("DECODE-FIRST", claims.decode_first, (), "PartialsBeforeDecodes"),
    Theorem("PARTIAL-NEXT", claims.partial_next, (), "AdmitBeforePartial", (lemmas.decodes_then_partials,)),
    Theorem("WORK-CONSERVING", claims.work_conserving, (), "OneAdmissionPerStep"),
    Theorem("NEVER-FIT", _state_only, ("NEVER-FIT",), "AcceptNeverFit"),
    Theorem("READY-WITHIN-BUDGET", _state_only, ("READY-WITHIN-BUDGET",), "ChangingBudget",
            (lemmas.planned_per_slot,)),
    Theorem("ONE-PARTIAL", _state_only, ("ONE-PARTIAL",), "AdmitBeforePartial"),
    Theorem("PROGRESS", claims.progress, (), "StrictFit"),
    Theorem("LIVENESS", claims.liveness, ("PARTIAL-YOUNGEST",), "LifoAdmission"),
)


@dataclass(slots=True)
class TheoremResult:
    theorem: str
    policy: str
    num_requests: int
    verdict: Verdict  # holds (proved), BROKEN (Z3 found a counterexample) or unknown (no answer: nothing proved)
    seconds: float
    counterexample: dict[str, Any] | None = field(default=None)

    @property
    def holds(self) -> bool:
        return self.verdict is Verdict.HOLDS


def obligation(theorem: Theorem, policy: Policy, num_requests: int) -> tuple[z3.BoolRef, z3.BoolRef, SymStep]:
    """(hypothesis, goal, step): the theorem holds iff hypothesis implies goal."""
    config = SymConfig.fresh()
    start = SymState.fresh("s0", num_requests, config)
    if theorem.name == "INIT":
        initial = policy.initial(start)
        step = SymStep(start, (), (), start, start.free_kv, z3.BoolVal(True), {})
        return z3.And(config.valid(), initial), z3.And([PARTS[p](start) for p in theorem.parts]), step
    arrived, adds = policy.arrive(start, "s1")
    step = policy.step(arrived)
    hypothesis = z3.And(config.valid(), invariant(start), adds, step.defs, step.after.config.valid())
    goal = z3.And(theorem.claim(step), *[PARTS[p](step.after) for p in theorem.parts])
    return hypothesis, goal, step


def prove(theorem: Theorem, policy: Policy | None = None, num_requests: int = DEFAULT_N,
          timeout_ms: int = TIMEOUT_MS) -> TheoremResult:
    """Ask Z3 for a state where the hypothesis holds and the goal fails: none means proved."""
    policy = Policy() if policy is None else policy
    began = time.perf_counter()
    hypothesis, goal, step = obligation(theorem, policy, num_requests)
    solver = new_solver(hypothesis, timeout_ms)
    if prove_in_turn(solver, _lemma_facts(theorem, step)).verdict is not Verdict.HOLDS:
        solver = new_solver(hypothesis, timeout_ms)  # a lemma failed (a wrong policy): judge the goal alone
    turn = prove_in_turn(solver, _split(goal, solver), keep_model=True)
    verdict, seconds = turn.verdict, time.perf_counter() - began
    if verdict is Verdict.BROKEN:  # the solver holds the refuted part's negation: its smallest model
        return TheoremResult(theorem.name, policy.name, num_requests, verdict, seconds,
                             describe(smallest(solver, step.before.config, step.before.requests), step))
    return TheoremResult(theorem.name, policy.name, num_requests, verdict, seconds)


def _lemma_facts(theorem: Theorem, step: SymStep) -> Iterator[z3.BoolRef]:
    """The facts of the theorem's lemmas, in order: each is proved, then assumed (see `lemmas`)."""
    for lemma in theorem.lemmas:
        yield from lemma(step)


def new_solver(hypothesis: z3.BoolRef, timeout_ms: int) -> z3.Solver:
    """A linear-integer-arithmetic solver holding `hypothesis`, giving up after `timeout_ms`."""
    solver = z3.SolverFor("QF_LIA")
    solver.set("timeout", timeout_ms)
    solver.add(hypothesis)
    return solver


def _split(goal: z3.BoolRef, solver: z3.Solver) -> list[z3.BoolRef]:
    """The goal's conjuncts, to prove one at a time in order, each assumed once proved (a long
    conjunction of per-request facts is far easier so). The definitions of a claim's named terms
    (`defs -> body`, see `claims.Names`) go to the solver; they only name terms, so this is sound."""
    if z3.is_implies(goal) and z3.is_and(goal.arg(0)) and _only_definitions(goal.arg(0)):
        solver.add(goal.arg(0))
        return _split(goal.arg(1), solver)
    if z3.is_and(goal):
        return [fact for part in goal.children() for fact in _split(part, solver)]
    return [goal]


def _only_definitions(defs: z3.BoolRef) -> bool:
    return all(z3.is_eq(d) and z3.is_const(d.arg(0)) and d.arg(0).decl().name().startswith(claims.NAMED)
               for d in defs.children())


def describe(model: z3.ModelRef, step: SymStep) -> dict[str, Any]:
    """A counterexample as plain data: the config, each arrived request's progress before the step,
    what the plan gave it and what it emitted, and its progress after."""
    val = partial(value, model)
    before, after = step.before, step.after
    config = {"token_budget": val(before.config.token_budget), "max_seqs": val(before.config.max_seqs),
              "kv_tokens": val(before.config.kv_tokens)}
    requests = []
    for i, r in enumerate(before.requests):
        if not val(r.arrived):
            continue
        a = after.requests[i]
        row = {"rid": i, "prompt_len": val(r.prompt_len), "max_new": val(r.max_new),
               "phase": _phase(val, r), "num_prefilled": val(r.num_prefilled), "num_emitted": val(r.num_emitted)}
        if step.plan:
            e = step.plan[i]
            row |= {"n": val(e.n) if val(e.planned) else 0, "emitted": val(step.emits[i]),
                    "after": {"num_prefilled": val(a.num_prefilled), "num_emitted": val(a.num_emitted)}}
        requests.append(row)
    return {"config": config, "free_kv": val(before.free_kv), "free_kv_after": val(after.free_kv),
            "budget_after": val(after.config.token_budget), "requests": requests}


def _phase(val: Any, r: Any) -> str:
    for name in ("ready", "partial", "waiting", "finished"):
        if val(getattr(r, name)):
            return name
    return "admitted, past max_new"
