"""FOLD: each phase of the policy is the in-order fold of its one-request body, the premise of every
loop induction that runs the body on request i alone (`induction._iteration`, `chain`).

A phase is Python over the state's requests, unrolled by running it; what it does on N requests is
only known by running it on N. So this is checked at a fixed N (`FOLD_REQUESTS`), every length,
budget, slot count, free KV and stopped flag left symbolic: the phase run on N requests at once
plans and leaves what N one-request iterations in index order plan and leave, each entered with
what the one before left. A policy that visits requests in another order (`LifoAdmission`, newest
first) or reads a request beyond the one it decides (a look-ahead) fails it, and the chained
theorems then judge nothing of it (`unknown`), since they are about the fold, not about it.
"""

from __future__ import annotations

import z3

from .obligation import Obligation
from .policy import Draft, Policy
from .symbolic import SymConfig, SymRequest, SymState

FOLD_REQUESTS = 3


def _draft(state: SymState, entered: tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.BoolRef, z3.ArithRef]) -> Draft:
    d = Draft(state)
    d.left, d.num_running, d.free_kv, d.stopped, d.num_admitted = entered
    return d


def fold(policy: Policy, phase: str, n: int = FOLD_REQUESTS) -> Obligation:
    config = SymConfig.fresh()
    reqs = tuple(SymRequest.fresh(f"fold.{phase}.r{k}") for k in range(n))
    entered = (z3.Int(f"fold.{phase}.left"), z3.Int(f"fold.{phase}.running"), z3.Int(f"fold.{phase}.free"),
               z3.Bool(f"fold.{phase}.stopped"), z3.Int(f"fold.{phase}.admitted"))
    whole_state = SymState(config, reqs, z3.Int(f"fold.{phase}.whole"))
    whole = _draft(whole_state, entered)
    getattr(policy, phase)(whole_state, whole)
    defs, goal = list(whole.defs), []
    state = entered
    for k, r in enumerate(reqs):
        one_state = SymState(config, (r,), z3.Int(f"fold.{phase}.one{k}"))
        one = _draft(one_state, state)
        getattr(policy, phase)(one_state, one)
        defs += one.defs
        goal += [whole.decode[k] == one.decode[0], whole.chunk[k] == one.chunk[0], whole.admit[k] == one.admit[0],
                 whole.first_chunk[k] == one.first_chunk[0]]
        state = (one.left, one.num_running, one.free_kv, one.stopped, one.num_admitted)
    left, running, free, stopped, admitted = state
    goal += [whole.left == left, whole.num_running == running, whole.free_kv == free, whole.stopped == stopped,
             whole.num_admitted == admitted]
    return Obligation(f"FOLD: {phase} (N={n})", z3.And(config.valid(), *defs), z3.And(goal), premise=True)


def phase_of(ob: Obligation) -> str | None:
    """The phase a FOLD obligation of this module is about; None for any other obligation."""
    if not (ob.premise and ob.name.startswith("FOLD: ") and ob.name.endswith(")")):
        return None
    return ob.name.removeprefix("FOLD: ").split(" (N=")[0]


def folds(policy: Policy) -> list[Obligation]:
    """One obligation per phase, in the policy's order."""
    return [fold(policy, phase.__name__) for phase in policy.phases()]
