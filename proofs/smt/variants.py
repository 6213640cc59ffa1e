"""The variants' arithmetic, proved by Z3 for every value (any number of requests, any budget, block
size or aging period): the lemmas behind ALIGNED-WORK-CONSERVING's bound, DECODE-WAIT and AGING-BOUND.
Each claim has a negative control: the same claim with its bound one tighter, or with aging dropped,
which Z3 must refute with a counterexample.

- ALIGNED-WORK-CONSERVING: an aligned chunk that does not finish its prompt leaves left - n <= b - 1
  of the budget, and b - 1 is reached (so b - 2 is refuted).
- DECODE-WAIT: let p be the number of ready requests ahead of a request in the rotation's order. A step
  that skips it serves B_t >= B of those ahead (so p >= B_t) and each of them falls behind it; newly
  ready and finished requests only ever lower p. Inductive step: after j skipped steps p <= p0 - j*B.
  Conclusion: if p0 <= R - 1 and a (j+1)-th skip happens, j + 1 <= ceil(R/B) - 1. (A tighter bound,
  ceil(R/B) - 2, is refuted.)
- AGING-BOUND: with priorities in [0, P] and effective priority p + (t - a) div A, a request that
  arrives at a_x >= a + (P - p) * A never outranks one of priority p that arrived at a. (With a_x one
  step earlier, and without aging, refuted.)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import z3

from stallfree.spec.verdict import Verdict

Claim = Callable[[], tuple[z3.BoolRef, list[z3.BoolRef]]]  # (conclusion, premises)


@dataclass(frozen=True, slots=True)
class VariantLemmaResult:
    name: str
    verdict: Verdict  # holds (proved for every value), BROKEN (Z3 found values), unknown (no answer)
    seconds: float
    counterexample: str | None = None


def decide(name: str, claim: Claim, timeout_ms: int = 20_000) -> VariantLemmaResult:
    """Prove `claim` for all values: its premises and the negated conclusion must be unsatisfiable."""
    started = time.perf_counter()
    conclusion, premises = claim()
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*premises, z3.Not(conclusion))
    verdict = solver.check()
    seconds = time.perf_counter() - started
    if verdict == z3.unsat:
        return VariantLemmaResult(name, Verdict.HOLDS, seconds)
    if verdict == z3.sat:
        return VariantLemmaResult(name, Verdict.BROKEN, seconds, str(solver.model()))
    return VariantLemmaResult(name, Verdict.UNKNOWN, seconds)


def aligned_unused(slack: int = 1) -> Claim:
    """left - aligned chunk <= b - slack, for a chunk that does not finish its prompt (slack 1: the claim)."""
    def claim() -> tuple[z3.BoolRef, list[z3.BoolRef]]:
        b, left, remaining = z3.Ints("b left remaining")
        n = left - left % b  # Z3's % on a positive divisor is the floor modulus, as Python's
        return left - n <= b - slack, [b >= 1, left >= 0, remaining > left]
    return claim


def decode_wait_step() -> Claim:
    """After j skips p <= p0 - j*B; one more skip (serving B_t >= B ahead of it) keeps it for j + 1."""
    def claim() -> tuple[z3.BoolRef, list[z3.BoolRef]]:
        p, p_next, p0, j, budget, served = z3.Ints("p p_next p0 j B B_t")
        return p_next <= p0 - (j + 1) * budget, [
            budget >= 1, j >= 0, p <= p0 - j * budget, served >= budget, p >= served, p_next <= p - served,
        ]
    return claim


def decode_wait_bound(tighter: int = 0) -> Claim:
    """A (j+1)-th skip needs p0 - j*B >= B (B served ahead of it); with p0 <= R - 1 that bounds j + 1."""
    def claim() -> tuple[z3.BoolRef, list[z3.BoolRef]]:
        p0, j, budget, ready = z3.Ints("p0 j B R")
        ceil = (ready + budget - 1) / budget  # Z3's / on ints is floor division for a positive divisor
        return j + 1 <= ceil - 1 - tighter, [budget >= 1, ready >= 1, j >= 0, p0 >= 0, p0 <= ready - 1,
                                             p0 - j * budget >= budget]
    return claim


def aging_bound(earlier: int = 0, aging: bool = True) -> Claim:
    """The later arrival's effective priority never exceeds the earlier's, ties going to the earlier."""
    def claim() -> tuple[z3.BoolRef, list[z3.BoolRef]]:
        top, p, p_x, period, a, a_x, t = z3.Ints("P p p_x A a a_x t")
        def effective(q: z3.ArithRef, arrived: z3.ArithRef) -> z3.ArithRef:
            return q + (t - arrived) / period if aging else q
        return effective(p_x, a_x) <= effective(p, a), [
            period >= 1, p >= 0, p <= top, p_x >= 0, p_x <= top, a >= 0, t >= a_x,
            a_x >= a + (top - p) * period - earlier, a_x > a,
        ]
    return claim


# (claim ID, name, claim, must hold): the claims, then their negative controls, which must be refuted.
CLAIMS: tuple[tuple[str, str, Claim, bool], ...] = (
    ("ALIGNED-WORK-CONSERVING", "unused <= b - 1 after an unfinished aligned chunk", aligned_unused(1), True),
    ("ALIGNED-WORK-CONSERVING", "control: unused <= b - 2 (refuted: b - 1 is reached)", aligned_unused(2), False),
    ("DECODE-WAIT", "inductive step: p <= p0 - j*B", decode_wait_step(), True),
    ("DECODE-WAIT", "run <= ceil(R/B) - 1", decode_wait_bound(0), True),
    ("DECODE-WAIT", "control: run <= ceil(R/B) - 2 (refuted)", decode_wait_bound(1), False),
    ("AGING-BOUND", "a_x >= a + (P-p)*A never outranks", aging_bound(0), True),
    ("AGING-BOUND", "control: a_x one step earlier (refuted)", aging_bound(1), False),
    ("AGING-BOUND", "control: no aging (refuted)", aging_bound(0, aging=False), False),
)
