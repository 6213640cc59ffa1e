"""FOLD for any N: each phase of the policy, on any number of requests, plans and leaves what the
in-order fold of its one-request run does, by induction on the number of requests k, in Z3.

`fold` checks this at N = 3 by unrolling. Here the phase's loop body is first shown to be a function
of one iteration (`fold_frame`: it reads only request i, the config and the carried budget left,
running count, free KV, stopped flag and admitted count, writes only request i's plan entry and the
carried values, and treats every iteration alike), so that by Python's `for` the phase on the first
k + 1 requests is the phase on the first k, then that iteration T on request k with what they left.
Then, with the requests Z3 arrays and the carried values functions of k (W: the whole phase after k
requests; F: the fold, k one-request runs of the phase itself, `induction._iteration`, each entered
with what the one before left, exactly what the chained loops run):

- **initiation**: W(0) = F(0), both the values the phase is entered with, and no entry yet;
- **consecution**: for any k, W(k) = F(k) and the entries of the requests before k agreeing, with
  W(k + 1) = T(W(k), request k) and F(k + 1) the one-request phase from F(k), give W(k + 1) =
  F(k + 1) and request k's entries agreeing;
- **exit**: at k = N, the whole phase's plan and left values are the fold's, for every N >= 0.

A phase that is no such loop, or whose body steps outside the frame (`LifoAdmission`'s admit, newest
first; a look-ahead reading `s.requests[i + 1]`, `fold_peek`), proves nothing here; it is then tried
at N = 2 .. `REFUTE_UP_TO` by `fold` (one N refutes "any N"): BROKEN with the counterexample found, or
unknown, naming the frame's refusal. The row's assumptions are `fold_frame`'s.

The loop inductions take this as their premise (`with_any_n`): after their FOLD at N = 3, the same
phases' obligations here (or, for a phase the frame refuses, FOLD at N = 2 and 4).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import z3

from stallfree.spec.verdict import Verdict

from .fold import FOLD_REQUESTS, fold, phase_of
from .fold_frame import CARRIED, ENTRIES, FrameError, iteration
from .induction import BOOL, INT, Requests, _iteration, _prove
from .obligation import Obligation
from .policy import Policy
from .symbolic import SymConfig

NAME = "FOLD (induction, any N)"
REFUTE_UP_TO = 4  # the largest N a phase outside the frame is tried at (a count, not seconds)
SORTS = {"left": INT, "num_running": INT, "free_kv": INT, "stopped": BOOL, "num_admitted": INT}
DEFAULTS = {"decode": z3.BoolVal(False), "chunk": z3.IntVal(0), "admit": z3.BoolVal(False), "first_chunk": z3.IntVal(0)}
ENTRY_SORTS = {"decode": BOOL, "chunk": INT, "admit": BOOL, "first_chunk": INT}


@dataclass
class FoldOutcome:
    verdict: Verdict
    seconds: float
    detail: str
    counterexample: dict[str, Any] | None = None
    phases: dict[str, str] = field(default_factory=dict)  # each phase's own verdict, and why


def _run(name: str, phase: str) -> tuple[tuple[z3.ExprRef, ...], dict[str, z3.FuncDeclRef]]:
    """A run's carried values, as functions of k, and its plan entries, as functions of the index."""
    carried = tuple(z3.Function(f"fold_any.{phase}.{name}.{c}", INT, SORTS[c]) for c in CARRIED)
    entries = {e: z3.Function(f"fold_any.{phase}.{name}.{e}", INT, ENTRY_SORTS[e]) for e in ENTRIES}
    return carried, entries


def obligations(policy: Policy, phase: str) -> list[Obligation]:
    """The induction on k for `phase`; FrameError if its body is no function of one iteration."""
    config, reqs, n, k = SymConfig.fresh(), Requests.fresh(), z3.Int("N"), z3.Int("k")
    j = z3.Int("j")
    (wc, we), (fc, fe) = _run("whole", phase), _run("fold", phase)
    entered = tuple(z3.Const(f"fold_any.{phase}.entered.{c}", SORTS[c]) for c in CARRIED)

    def inv(at: z3.ArithRef) -> z3.BoolRef:
        agree = z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < at), z3.And([we[e](j) == fe[e](j) for e in ENTRIES])))
        return z3.And(at >= 0, at <= n, *(w(at) == f(at) for w, f in zip(wc, fc, strict=True)), agree)

    r = reqs.at(k)
    t = iteration(policy, phase, config, r, tuple(w(k) for w in wc), f"fold_any.{phase}.T.")
    whole = [*(w(k + 1) == v for w, v in zip(wc, t.carried, strict=True)),
             *(we[e](k) == (DEFAULTS[e] if t.entry[e] is None else t.entry[e]) for e in ENTRIES), *t.defs]
    left, running, free, stopped, admitted = (f(k) for f in fc)
    d = _iteration(policy, phase, r, config, left, running, free, stopped, admitted)
    one = [*(f(k + 1) == v for f, v in zip(fc, (d.left, d.num_running, d.free_kv, d.stopped, d.num_admitted),
                                           strict=True)),
           *(fe[e](k) == getattr(d, e)[0] for e in ENTRIES), *d.defs]
    base = z3.And(config.valid(), n >= 0, *(w(0) == x for w, x in zip(wc, entered, strict=True)),
                  *(f(0) == x for f, x in zip(fc, entered, strict=True)))
    goal = z3.And(*(w(n) == f(n) for w, f in zip(wc, fc, strict=True)),
                  z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < n), z3.And([we[e](j) == fe[e](j) for e in ENTRIES]))))
    return [
        Obligation(f"{phase}: initiation", base, inv(z3.IntVal(0))),
        Obligation(f"{phase}: consecution", z3.And(base, inv(k), k >= 0, k < n, *whole, *one), inv(k + 1),
                   k == 0),
        Obligation(f"{phase}: exit", z3.And(base, inv(n)), goal),
    ]


def premises(policy: Policy, phase: str) -> list[Obligation]:
    """FOLD of `phase` for any N as a theorem's premise: the induction's obligations; where the frame
    refuses the phase, FOLD at N = 2 .. REFUTE_UP_TO but 3, which the theorem checks already (a
    fixed-N premise, no more)."""
    try:
        return [replace(ob, name=f"FOLD (any N): {ob.name}", premise=True) for ob in obligations(policy, phase)]
    except FrameError:
        return [fold(policy, phase, n) for n in range(2, REFUTE_UP_TO + 1) if n != FOLD_REQUESTS]


def refused(policy: Policy) -> dict[str, str]:
    """The phases of `policy` whose body the frame refuses, each with why: `premises` gives them FOLD at
    N = 2 .. REFUTE_UP_TO only, so a theorem resting on it is proved for any N only where this is empty."""
    out: dict[str, str] = {}
    for method in policy.phases():
        try:
            obligations(policy, method.__name__)
        except FrameError as error:
            out[method.__name__] = str(error)
    return out


def with_any_n(policy: Policy, theorem: list[Obligation]) -> list[Obligation]:
    """`theorem`'s obligations with, after its last FOLD premise at N = 3, the same phases' FOLD for any N
    (`premises`), so that the premise is proved before the loops' own obligations are tried."""
    phases = [(k, phase) for k, ob in enumerate(theorem) if (phase := phase_of(ob)) is not None]
    if not phases:
        return theorem
    last = phases[-1][0] + 1
    return [*theorem[:last], *(ob for _, phase in phases for ob in premises(policy, phase)), *theorem[last:]]


def _phase(policy: Policy, phase: str, timeout_ms: int) -> tuple[Verdict, str, dict[str, Any] | None]:
    """One phase: proved by the induction, else refuted at a fixed N, else unknown; and why."""
    try:
        result = _prove(obligations(policy, phase), NAME, policy, timeout_ms)
    except FrameError as error:
        why = str(error)
    else:
        if result.verdict is Verdict.HOLDS:
            return Verdict.HOLDS, "initiation, consecution, exit", None
        ob = (result.counterexample or {}).get("obligation", "?")
        differ = "the body run in its frame and the phase run on one request differ"  # the compiled body is not it
        why = f"{ob}: {differ if result.verdict is Verdict.BROKEN else 'no answer (vacuous or out of time)'}"
    for n in range(2, REFUTE_UP_TO + 1):  # one N with a counterexample refutes "for any N"
        ob = replace(fold(policy, phase, n), premise=False)
        refuted = _prove([ob], NAME, policy, timeout_ms)
        if refuted.verdict is Verdict.BROKEN:
            return Verdict.BROKEN, f"{why}; {ob.name} refuted", {**(refuted.counterexample or {}), "frame": why}
    return Verdict.UNKNOWN, f"{why}; not refuted at N <= {REFUTE_UP_TO}: nothing proved", None


def prove(policy: Policy | None = None, timeout_ms: int = 30_000) -> FoldOutcome:
    """FOLD for any N, of every phase of `policy`, in its order."""
    policy = Policy() if policy is None else policy
    began = time.perf_counter()
    out = FoldOutcome(Verdict.HOLDS, 0.0, "")
    for method in policy.phases():
        verdict, why, counterexample = _phase(policy, method.__name__, timeout_ms)
        out.phases[method.__name__] = f"{verdict.value}: {why}"
        if verdict is Verdict.BROKEN and out.verdict is not Verdict.BROKEN:
            out.verdict, out.counterexample = Verdict.BROKEN, counterexample
        elif verdict is Verdict.UNKNOWN and out.verdict is Verdict.HOLDS:
            out.verdict = Verdict.UNKNOWN
    out.detail = "; ".join(f"{phase} {why}" for phase, why in out.phases.items())
    out.seconds = time.perf_counter() - began
    return out
