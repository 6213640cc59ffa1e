"""Theorems for any number of requests: each phase of the step is a loop over requests, and these
prove what one iteration keeps, for one request in any state the invariant allows, entered with any
budget left, any count of running requests and any free KV. By induction over the loop the fact
then holds for every N, with no bound at all.

- BUDGET (any N): an iteration gives n >= 0 tokens and leaves left - n >= 0, so `used + left == B`
  and `left >= 0` hold throughout, and a plan never carries more than B.
- SLOTS (any N): an admission iteration keeps running <= S.
- KV (any N): an admission iteration keeps free >= 0, taking exactly the reservation it admits;
  completion returns a reservation exactly when its request emits its last token.
- PROGRESS (any N): a request given an entry gets n >= 1 and loses at least one unit of work (prompt
  positions plus tokens to emit); one without an entry keeps its work.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import z3

from stallfree.spec.verdict import Verdict

from .in_turn import refuted
from .inductive import first_token, never_fit, types
from .policy import Draft, Policy
from .symbolic import SymConfig, SymState, check
from .theorems import TheoremResult

Body = Callable[[Policy, SymState, Draft], z3.BoolRef]  # (goal) for one iteration


def _entered(s: SymState) -> Draft:
    """A draft entered mid-loop: any budget left, running count and free KV (within their limits)."""
    d = Draft(s)
    d.left, d.num_running, d.free_kv = z3.Int("left"), z3.Int("num_running"), z3.Int("free_kv")
    d.stopped = z3.Bool("stopped")
    return d


def _context(s: SymState, d: Draft) -> z3.BoolRef:
    c = s.config
    return z3.And(c.valid(), types(s), first_token(s), never_fit(s), d.left >= 0, d.left <= c.token_budget,
                  d.num_running >= 0, d.num_running <= c.max_seqs, d.free_kv >= 0, d.free_kv <= c.kv_tokens)


def budget_body(policy: Policy, s: SymState, d: Draft) -> z3.BoolRef:
    facts = []
    for phase in (policy.plan_decodes, policy.plan_partials, policy.admit):
        left = d.left
        phase(s, d)
        given = {policy.plan_decodes: z3.If(_decode(d), 1, 0), policy.plan_partials: d.chunk[0],
                 policy.admit: d.first_chunk[0]}[phase]
        facts += [given >= 0, d.left == left - given, d.left >= 0]
        d = _reenter(s, d)
    return z3.And(facts)


def _decode(d: Draft) -> z3.BoolRef:
    return d.decode[0]


def _reenter(s: SymState, d: Draft) -> Draft:
    """A fresh entry for the next phase: other requests may have spent budget in between."""
    fresh = _entered(s)
    fresh.defs = d.defs
    fresh.left = z3.Int(f"left.{len(d.defs)}")
    fresh.defs.append(z3.And(fresh.left >= 0, fresh.left <= s.config.token_budget))
    return fresh


def slots_body(policy: Policy, s: SymState, d: Draft) -> z3.BoolRef:
    policy.admit(s, d)
    return d.num_running <= s.config.max_seqs


def kv_body(policy: Policy, s: SymState, d: Draft) -> z3.BoolRef:
    free = d.free_kv
    policy.admit(s, d)
    r = s.requests[0]
    return z3.And(d.free_kv >= 0, d.free_kv == free - z3.If(d.admit[0], r.reservation, 0))


def kv_completion_body(policy: Policy, s: SymState, d: Draft) -> z3.BoolRef:
    free = d.free_kv
    step = policy.step(s, d)
    b, a, e = s.requests[0], step.after.requests[0], step.plan[0]
    finishes = z3.And(step.emits[0], a.num_emitted >= a.max_new)
    return z3.And(z3.Implies(finishes, z3.Or(b.running, e.admit)),
                  step.after.free_kv == free - z3.If(e.admit, b.reservation, 0) + z3.If(finishes, b.reservation, 0))


def progress_body(policy: Policy, s: SymState, d: Draft) -> z3.BoolRef:
    step = policy.step(s, d)
    b, a, e = s.requests[0], step.after.requests[0], step.plan[0]
    return z3.And(z3.Implies(e.planned, z3.And(e.n >= 1, a.work <= b.work - 1)),
                  z3.Implies(z3.Not(e.planned), a.work == b.work), a.work >= 0)


@dataclass(frozen=True, slots=True)
class LoopTheorem:
    name: str
    body: Body
    control: str  # the mutant (`mutants.MUTANTS`) it must fail on


LOOP_THEOREMS: tuple[LoopTheorem, ...] = (
    LoopTheorem("BUDGET (any N)", budget_body, "FreeDecodes"),
    LoopTheorem("SLOTS (any N)", slots_body, "IgnoreSlots"),
    LoopTheorem("KV (any N)", kv_body, "IgnoreKV"),
    LoopTheorem("KV (any N, return)", kv_completion_body, "EarlyRelease"),
    LoopTheorem("PROGRESS (any N)", progress_body, "AdmitWithoutBudget"),
)


def prove_loop(theorem: LoopTheorem, policy: Policy | None = None, timeout_ms: int = 60_000) -> TheoremResult:
    policy = Policy() if policy is None else policy
    began = time.perf_counter()
    s = SymState.fresh("req", 1, SymConfig.fresh())
    d = _entered(s)
    context = _context(s, d)
    goal = theorem.body(policy, s, d)
    solver = z3.SolverFor("QF_LIA")
    solver.set("timeout", timeout_ms)
    solver.add(context, z3.And(d.defs), z3.Not(goal))
    verdict = refuted(check(solver))
    seconds = time.perf_counter() - began
    if verdict is Verdict.BROKEN:
        model = solver.model()
        values = {str(decl): str(model[decl]) for decl in model.decls() if not str(decl).startswith("req.free")}
        return TheoremResult(theorem.name, policy.name, 0, verdict, seconds, {"one iteration": values})
    return TheoremResult(theorem.name, policy.name, 0, verdict, seconds)
