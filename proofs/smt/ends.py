"""Z3 theorems for requests that end early: the invariant is closed under stops and cancels.

An end, in the symbolic state, is a ready request ending early: its max_new becomes the tokens it
has emitted (so it reads as finished) and its reservation of the old prompt_len + max_new comes
back. Two theorems:

- END: from any state satisfying the whole invariant (`inductive.invariant`), ending any subset of
  the ready requests leaves a state satisfying it. A cancel of a ready request between steps is
  such an end.
- STOP-READY: after any adds and one step of the policy, every request that emitted a token in it
  and still runs is ready. So a stop (which names only such requests) is such an end too.

With the step theorems, which hold from any state satisfying the invariant, every behaviour that
interleaves adds, steps, stops and cancels of ready requests keeps the invariant and obeys every
step rule: READY-WITHIN-BUDGET and ONE-PARTIAL among them, proved, not assumed.

Cancels of waiting and partial requests, and CANCEL's own statement (never planned after), are
proved in `cancels`, where a cancel removes the request and renumbers those behind it.

The negative controls: END with the reservation not returned (`returns_kv=False`) must fail, on
KV; STOP-READY must fail for `EarlyFirstToken`, a policy whose every chunk emits a token.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import z3

from stallfree.spec.verdict import Verdict

from .in_turn import prove_in_turn, refuted
from .inductive import PARTS, invariant
from .policy import Policy, SymEntry
from .symbolic import SymConfig, SymRequest, SymState, refute
from .theorems import DEFAULT_N, TIMEOUT_MS, TheoremResult, new_solver


@dataclass(frozen=True, slots=True)
class Ended:
    """The state after some requests end early: `ends[i]` is true where request i ends."""

    state: SymState
    ends: tuple[z3.BoolRef, ...]
    may_end: z3.BoolRef  # which slots may end (the hypothesis on `ends`)


def end_early(s: SymState, eligible: list[z3.BoolRef], name: str, returns_kv: bool = True) -> Ended:
    """Any subset of the slots where `eligible` holds ends now: its max_new becomes its tokens so far
    and (unless `returns_kv` is False: the control) its reservation comes back."""
    ends = tuple(z3.Bool(f"{name}.end{i}") for i in range(len(s.requests)))
    requests = tuple(
        SymRequest(r.arrived, r.admitted, r.prompt_len, z3.If(e, r.num_emitted, r.max_new), r.num_prefilled,
                   r.num_emitted)
        for e, r in zip(ends, s.requests, strict=True)
    )
    returned = z3.Sum([z3.If(e, r.reservation, 0) for e, r in zip(ends, s.requests, strict=True)])
    free_kv = s.free_kv + returned if returns_kv else s.free_kv
    may_end = z3.And([z3.Implies(e, ok) for e, ok in zip(ends, eligible, strict=True)])
    return Ended(SymState(s.config, requests, free_kv), ends, may_end)


def end_obligation(num_requests: int, returns_kv: bool = True) -> tuple[z3.BoolRef, Ended, SymState]:
    """From any state satisfying the invariant, any subset of the ready requests ends."""
    config = SymConfig.fresh()
    start = SymState.fresh("s0", num_requests, config)
    ended = end_early(start, [r.ready for r in start.requests], "end", returns_kv)
    return z3.And(config.valid(), invariant(start), ended.may_end), ended, start


def kv_per_slot(ended: Ended, before: SymState) -> list[z3.BoolRef]:
    """Per request: what it reserves after the ends, plus what it returned, is what it reserved before."""
    return [z3.If(a.running, a.reservation, 0) + z3.If(e, b.reservation, 0) == z3.If(b.running, b.reservation, 0)
            for e, a, b in zip(ended.ends, ended.state.requests, before.requests, strict=True)]


def stops_end_ready_requests(num_requests: int, policy: Policy | None = None) -> z3.BoolRef:
    """After any adds and one step, a request that emitted a token in it and still runs is ready."""
    policy = Policy() if policy is None else policy
    config = SymConfig.fresh()
    start = SymState.fresh("s0", num_requests, config)
    arrived, adds = policy.arrive(start, "s1")
    step = policy.step(arrived)
    claim = z3.And([z3.Implies(z3.And(emitted, r.running), r.ready)
                    for emitted, r in zip(step.emits, step.after.requests, strict=True)])
    return z3.Implies(z3.And(config.valid(), invariant(start), adds, step.defs, step.after.config.valid()), claim)


def prove_end(num_requests: int = DEFAULT_N, returns_kv: bool = True, timeout_ms: int = TIMEOUT_MS) -> TheoremResult:
    """END: ending any ready requests keeps every part of the invariant. The per-request KV facts are
    proved first, then assumed (they hold whether or not the KV comes back: only the sum uses it);
    then each part, one at a time; the first part Z3 refutes is the counterexample's `part`."""
    began = time.perf_counter()
    hypothesis, ended, before = end_obligation(num_requests, returns_kv)
    policy = "reference" if returns_kv else "keeps the reservation"

    def outcome(verdict: Verdict, detail: dict[str, str] | None = None) -> TheoremResult:
        return TheoremResult("END", policy, num_requests, verdict, time.perf_counter() - began, detail)

    solver = new_solver(hypothesis, timeout_ms)
    lemmas = prove_in_turn(solver, kv_per_slot(ended, before))
    if lemmas.verdict is not Verdict.HOLDS:
        return outcome(Verdict.UNKNOWN)  # a lemma not proved: nothing is claimed of the parts
    parts = list(PARTS.items())
    turn = prove_in_turn(solver, (check(ended.state) for _, check in parts))
    if turn.verdict is Verdict.BROKEN and turn.part is not None:
        return outcome(turn.verdict, {"part": parts[turn.part][0]})
    return outcome(turn.verdict)


def prove_stops_end_ready(num_requests: int = DEFAULT_N, policy: Policy | None = None,
                          timeout_ms: int = TIMEOUT_MS) -> TheoremResult:
    """STOP-READY: every request a stop may name (it emitted in the step and still runs) is ready."""
    began = time.perf_counter()
    solver = z3.SolverFor("QF_LIA")
    solver.set("timeout", timeout_ms)
    verdict = refuted(refute(solver, stops_end_ready_requests(num_requests, policy)))
    name = "reference" if policy is None else type(policy).__name__
    return TheoremResult("STOP-READY", name, num_requests, verdict, time.perf_counter() - began)


class EarlyFirstToken(Policy):
    """Every chunk emits a token, the prompt done or not: a stop could then end a partial request."""

    def emitted(self, entry: SymEntry, r: SymRequest, num_prefilled: z3.ArithRef) -> z3.ArithRef:
        return z3.If(z3.Or(entry.decode, entry.prefill > 0), 1, 0)
