"""The scheduler's state as Z3 terms: N requests indexed in arrival order, with unbounded integer lengths,
budget and capacity. This is the state the Z3 theorems quantify over.

Request index i is the i-th request to arrive. Running requests are kept in admission order by the reference
and, since admission is first come first served (FCFS), admission order is arrival order: the
indexes' order serves for both, and the invariant states that the admitted are a prefix of the arrived.
A finished request keeps its index (admitted, every token emitted); its reservation is back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import z3

MINIMISE_MS = 3_000  # spent making a counterexample small


@dataclass(frozen=True, slots=True)
class SymConfig:
    token_budget: z3.ArithRef  # B
    max_seqs: z3.ArithRef  # S
    kv_tokens: z3.ArithRef  # K

    @classmethod
    def fresh(cls) -> SymConfig:
        return cls(z3.Int("B"), z3.Int("S"), z3.Int("K"))

    def valid(self) -> z3.BoolRef:
        return z3.And(self.token_budget >= 1, self.max_seqs >= 1, self.kv_tokens >= 1)


@dataclass(frozen=True, slots=True)
class SymRequest:
    """One request index: whether its request has arrived and been admitted, its lengths, its progress."""

    arrived: z3.BoolRef
    admitted: z3.BoolRef  # admitted at some step (it may have finished since)
    prompt_len: z3.ArithRef
    max_new: z3.ArithRef
    num_prefilled: z3.ArithRef
    num_emitted: z3.ArithRef

    @classmethod
    def fresh(cls, name: str) -> SymRequest:
        return cls(
            z3.Bool(f"{name}.arrived"), z3.Bool(f"{name}.admitted"), z3.Int(f"{name}.prompt_len"),
            z3.Int(f"{name}.max_new"), z3.Int(f"{name}.num_prefilled"), z3.Int(f"{name}.num_emitted"),
        )

    @property
    def reservation(self) -> z3.ArithRef:
        return self.prompt_len + self.max_new

    @property
    def finished(self) -> z3.BoolRef:
        return z3.And(self.admitted, self.num_emitted == self.max_new)

    @property
    def running(self) -> z3.BoolRef:
        return z3.And(self.admitted, self.num_emitted < self.max_new)

    @property
    def waiting(self) -> z3.BoolRef:
        return z3.And(self.arrived, z3.Not(self.admitted))

    @property
    def ready(self) -> z3.BoolRef:
        return z3.And(self.running, self.num_prefilled == self.prompt_len)

    @property
    def partial(self) -> z3.BoolRef:
        return z3.And(self.running, self.num_prefilled < self.prompt_len)

    @property
    def work(self) -> z3.ArithRef:
        """Prompt positions left to run plus tokens left to emit (0 for a request not yet arrived)."""
        return z3.If(self.arrived, self.prompt_len - self.num_prefilled + self.max_new - self.num_emitted, 0)


@dataclass(frozen=True, slots=True)
class SymState:
    config: SymConfig
    requests: tuple[SymRequest, ...]
    free_kv: z3.ArithRef  # the scheduler's own count of unreserved KV tokens

    @classmethod
    def fresh(cls, name: str, num_requests: int, config: SymConfig) -> SymState:
        requests = tuple(SymRequest.fresh(f"{name}.r{i}") for i in range(num_requests))
        return cls(config, requests, z3.Int(f"{name}.free_kv"))

    def count(self, predicate: str) -> z3.ArithRef:
        """How many requests satisfy the named property (running, waiting, ready, partial ...)."""
        return z3.Sum([z3.If(getattr(r, predicate), 1, 0) for r in self.requests])

    @property
    def reserved(self) -> z3.ArithRef:
        return z3.Sum([z3.If(r.running, r.reservation, 0) for r in self.requests])

    @property
    def idle(self) -> z3.BoolRef:
        return z3.Not(z3.Or([z3.Or(r.waiting, r.running) for r in self.requests]))

    @property
    def work(self) -> z3.ArithRef:
        return z3.Sum([r.work for r in self.requests])


def value(model: z3.ModelRef, term: Any) -> Any:
    """`term` in `model` as a Python bool or int (any value where the model leaves it free)."""
    result = model.eval(term, model_completion=True)
    return z3.is_true(result) if z3.is_bool(result) else result.as_long()


def smallest(solver: z3.Solver, config: SymConfig, requests: Iterable[SymRequest]) -> z3.ModelRef:
    """A model of `solver` with the smallest config and arrived requests' reservations Z3 finds
    within MINIMISE_MS, so that a counterexample reads like a hand-made one; the solver's own model
    if the search runs out of time."""
    found = solver.model()
    optimizer = z3.Optimize()
    optimizer.set("timeout", MINIMISE_MS)
    optimizer.add(solver.assertions())
    optimizer.minimize(z3.Sum([config.token_budget, config.max_seqs, config.kv_tokens]
                              + [z3.If(r.arrived, r.reservation, 0) for r in requests]))
    return optimizer.model() if optimizer.check() == z3.sat else found


# Z3's reason_unknown() when a Ctrl-C stopped check() (it takes the signal while it searches); a solver
# that ran out of time says "timeout" instead. "canceled" is not taken for a Ctrl-C: Z3 also says it
# when a long timeout fires inside a tactic (seen at N = 4 of the paged step with a 60 s limit), and a
# timeout must read as an unknown row, not stop the run as if the user had pressed Ctrl-C.
CTRL_C = ("interrupted from keyboard",)


def check(solver: z3.Solver) -> z3.CheckSatResult:
    """`solver.check()`, except that a Ctrl-C, which Z3 takes to stop the search and answer unknown,
    is raised as KeyboardInterrupt: an interrupted proof is not a solver that ran out of time."""
    verdict = solver.check()
    if verdict == z3.unknown and solver.reason_unknown() in CTRL_C:
        raise KeyboardInterrupt
    return verdict


def refute(solver: z3.Solver, fact: z3.BoolRef) -> z3.CheckSatResult:
    """unsat: `fact` follows from what the solver holds; sat: a model breaks it (`check`, so a
    Ctrl-C is not read as a timeout). The solver is left as it was."""
    solver.push()
    solver.add(z3.Not(fact))
    verdict = check(solver)
    solver.pop()
    return verdict
