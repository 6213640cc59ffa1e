"""From a Z3 counterexample to a workload: a bounded search from a new scheduler (the invariant is
not assumed, every state is reached), unrolling up to `max_steps` steps of a policy with any adds
before each, for a step that breaks a theorem. The model is then read back as a
`stallfree.spec.Workload`: the request indexes that arrived before step k are requests with arrival_step k.

An inductive counterexample is a state satisfying the invariant, which need not be reachable; this
finds one that is, when there is one within the bound, so a wrong policy's failure can be replayed
(on the fault of the same rule, with `stallfree trace --workload`)."""

from __future__ import annotations

from functools import partial

import z3

from stallfree.spec import Arrival, Config, Workload

from .inductive import PARTS
from .policy import Policy
from .symbolic import SymConfig, SymState, check, smallest, value
from .theorems import Theorem

REACH_STEPS = 5
REACH_REQUESTS = 4
REACH_MS = 20_000


def reach(theorem: Theorem, policy: Policy, num_requests: int = REACH_REQUESTS, max_steps: int = REACH_STEPS,
          timeout_ms: int = REACH_MS) -> Workload | None:
    """A workload on which `policy` breaks `theorem` within `max_steps` steps, or None."""
    config = SymConfig.fresh()
    state = SymState.fresh("w0", num_requests, config)
    solver = z3.SolverFor("QF_LIA")
    solver.set("timeout", timeout_ms)
    solver.add(config.valid(), policy.initial(state))
    if theorem.name == "INIT":
        return _workload(solver, z3.And([PARTS[p](state) for p in theorem.parts]), config, [])
    history: list[tuple[SymState, SymState]] = []  # (before adds, after adds) of each step
    for k in range(max_steps):
        arrived, adds = policy.arrive(state, f"w{k}.adds")
        step = policy.step(arrived)
        if step.after.config is not config:
            return None  # the policy changes the config between steps: no workload can say that
        solver.add(adds, step.defs)
        history.append((state, arrived))
        goal = z3.And(theorem.claim(step), *[PARTS[p](step.after) for p in theorem.parts])
        found = _workload(solver, goal, config, history)
        if found is not None:
            return found
        state = step.after
    return None


def _workload(solver: z3.Solver, goal: z3.BoolRef, config: SymConfig,
              history: list[tuple[SymState, SymState]]) -> Workload | None:
    solver.push()
    solver.add(z3.Not(goal))
    try:
        if check(solver) != z3.sat:
            return None
        model = smallest(solver, config, history[-1][1].requests) if history else solver.model()
    finally:
        solver.pop()
    val = partial(value, model)
    arrivals = []
    for k, (before, after) in enumerate(history):
        for i, (b, a) in enumerate(zip(before.requests, after.requests, strict=True)):
            if val(a.arrived) and not val(b.arrived):
                arrivals.append(Arrival(i, int(val(a.prompt_len)), int(val(a.max_new)), k))
    cfg = Config(int(val(config.token_budget)), int(val(config.max_seqs)), int(val(config.kv_tokens)))
    return Workload(cfg, tuple(arrivals))
