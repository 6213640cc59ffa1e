"""The reference's policy as Z3 terms: one step (schedule, then complete) from a symbolic state, and
the environment's adds before it.

It follows the contract's policy and the reference's code phase by phase, each phase a method, so a
wrong policy (`mutants`) overrides exactly one. The differential test evaluates this step on
concrete states and compares it with what the reference actually plans and emits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from .symbolic import SymConfig, SymRequest, SymState


def smin(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a <= b, a, b)


@dataclass(frozen=True, slots=True)
class SymEntry:
    """What one request gets in the plan: a decode, a chunk of its partial prompt, or admission with its
    first chunk (at most one of these for the reference; the plan lists it once)."""

    decode: z3.BoolRef
    chunk: z3.ArithRef  # tokens for a partial prompt; 0: none
    admit: z3.BoolRef
    first_chunk: z3.ArithRef  # tokens of the first chunk when admitted; 0: not admitted

    @property
    def planned(self) -> z3.BoolRef:
        return z3.Or(self.decode, self.chunk > 0, self.admit)

    @property
    def prefill(self) -> z3.ArithRef:
        return self.chunk + self.first_chunk

    @property
    def n(self) -> z3.ArithRef:
        return z3.If(self.decode, 1, 0) + self.prefill


@dataclass(frozen=True, slots=True)
class SymStep:
    before: SymState
    plan: tuple[SymEntry, ...]
    emits: tuple[z3.BoolRef, ...]  # request i emitted a token this step
    after: SymState
    free_after_admission: z3.ArithRef
    defs: z3.BoolRef  # the definitions of the named intermediate terms (`Draft.let`)
    left_after: dict[str, z3.ArithRef] = field(default_factory=dict)  # budget left after each phase, by name

    @property
    def num_tokens(self) -> z3.ArithRef:
        return z3.Sum([e.n for e in self.plan])


class Draft:
    """The plan as the phases build it: per request what it got, and the budget, slots, KV left."""

    def __init__(self, state: SymState) -> None:
        n = len(state.requests)
        self.decode: list[z3.BoolRef] = [z3.BoolVal(False)] * n
        self.chunk: list[z3.ArithRef] = [z3.IntVal(0)] * n
        self.admit: list[z3.BoolRef] = [z3.BoolVal(False)] * n
        self.first_chunk: list[z3.ArithRef] = [z3.IntVal(0)] * n
        self.defs: list[z3.BoolRef] = []
        self.prefix = f"{state.free_kv}."
        self.left: z3.ArithRef = state.config.token_budget
        self.num_running: z3.ArithRef = self.let("num_running", state.count("running"))
        self.free_kv: z3.ArithRef = state.free_kv
        self.stopped: z3.BoolRef = z3.BoolVal(False)  # admission has met a request that does not fit
        self.num_admitted: z3.ArithRef = z3.IntVal(0)  # admissions so far this step (no claim reads it)

    def let(self, name: str, term: z3.ArithRef) -> z3.ArithRef:
        """A fresh constant defined as `term`: the solver reasons over named steps of the loops, not
        over one deeply nested term (this is what lets the whole-step theorems scale with N)."""
        const = z3.Int(f"{self.prefix}{name}.{len(self.defs)}")
        self.defs.append(const == term)
        return const


class Policy:
    """The reference's step: decodes oldest first, then partial prompts, then FCFS admissions."""

    @property
    def name(self) -> str:
        return "reference" if type(self) is Policy else type(self).__name__

    # -- the environment ---------------------------------------------------------------------------

    def arrive(self, before: SymState, name: str) -> tuple[SymState, z3.BoolRef]:
        """Any requests may arrive, in index order; add() accepts only those that fit K (NEVER-FIT).
        Returns the state after the adds and what the adds assume."""
        arrived = [z3.Bool(f"{name}.r{i}.arrived") for i in range(len(before.requests))]
        requests = tuple(
            SymRequest(a, r.admitted, r.prompt_len, r.max_new, r.num_prefilled, r.num_emitted)
            for a, r in zip(arrived, before.requests, strict=True)
        )
        after = SymState(before.config, requests, before.free_kv)
        facts = [z3.Implies(r.arrived, a) for a, r in zip(arrived, before.requests, strict=True)]
        facts += [z3.Implies(arrived[i + 1], arrived[i]) for i in range(len(arrived) - 1)]
        facts += [z3.Implies(r.arrived, self.accepts(r, before.config)) for r in requests]
        return after, z3.And(facts)

    def accepts(self, request: SymRequest, config: SymConfig) -> z3.BoolRef:
        return request.reservation <= config.kv_tokens

    # -- schedule -----------------------------------------------------------------------------------

    def phases(self) -> tuple[Callable[[SymState, Draft], None], ...]:
        return (self.plan_decodes, self.plan_partials, self.admit)

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            take = z3.And(r.ready, d.left > 0)
            d.decode[i] = take
            d.left = d.let("left", z3.If(take, d.left - 1, d.left))

    def chunk(self, r: SymRequest, left: z3.ArithRef) -> z3.ArithRef:
        return smin(r.prompt_len - r.num_prefilled, left)

    def plan_partials(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            n = d.let("chunk", z3.If(z3.And(r.partial, d.left > 0), self.chunk(r, d.left), 0))
            d.chunk[i] = n
            d.left = d.let("left", d.left - n)

    def fits(self, r: SymRequest, s: SymState, d: Draft) -> z3.BoolRef:
        return z3.And(d.left > 0, d.num_running < s.config.max_seqs, r.reservation <= d.free_kv)

    def admit(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            go = z3.And(r.waiting, z3.Not(d.stopped), self.fits(r, s, d))
            n = d.let("first_chunk", z3.If(go, smin(r.prompt_len, d.left), 0))
            d.admit[i] = go
            d.first_chunk[i] = n
            d.left = d.let("left", d.left - n)
            d.num_running = d.let("num_running", d.num_running + z3.If(go, 1, 0))
            d.free_kv = d.let("free_kv", d.free_kv - z3.If(go, r.reservation, 0))
            d.stopped = self.stops(d.stopped, r, go)
            d.num_admitted = d.num_admitted + z3.If(go, 1, 0)

    def stops(self, stopped: z3.BoolRef, r: SymRequest, admitted: z3.BoolRef) -> z3.BoolRef:
        """Admission stops at the first waiting request that does not fit (FCFS)."""
        return z3.Or(stopped, z3.And(r.waiting, z3.Not(admitted)))

    # -- complete -----------------------------------------------------------------------------------

    def emitted(self, entry: SymEntry, r: SymRequest, num_prefilled: z3.ArithRef) -> z3.ArithRef:
        """Tokens request `r` emits: one when its prompt is done after the step (a decode, or the chunk
        that completes it)."""
        return z3.If(z3.And(entry.planned, num_prefilled == r.prompt_len), 1, 0)

    def releases(self, entry: SymEntry, r: SymRequest, num_prefilled: z3.ArithRef, num_emitted: z3.ArithRef,
                 tokens: z3.ArithRef) -> z3.BoolRef:
        """A reservation comes back on the step its request emits its last token."""
        return z3.And(tokens > 0, num_emitted >= r.max_new)

    def after_config(self, config: SymConfig) -> SymConfig:
        return config

    def initial_free_kv(self, config: SymConfig) -> z3.ArithRef:
        return config.kv_tokens

    def initial_at(self, r: SymRequest, index: z3.ArithRef) -> z3.BoolRef:
        """Request `index` of a new scheduler: not arrived or admitted, no progress (the index a term,
        so that the any-N INIT, `liveness_init`, asks it of every index at once)."""
        return z3.And(z3.Not(r.arrived), z3.Not(r.admitted), r.num_prefilled == 0, r.num_emitted == 0,
                      r.prompt_len >= 1, r.max_new >= 1)

    def initial(self, s: SymState) -> z3.BoolRef:
        """The state of a new scheduler: each request as `initial_at` says, all KV free."""
        facts = [self.initial_at(r, z3.IntVal(i)) for i, r in enumerate(s.requests)]
        return z3.And(*facts, s.free_kv == self.initial_free_kv(s.config))

    def step(self, s: SymState, d: Draft | None = None) -> SymStep:
        """Schedule, then complete, from `s`; `d` (default: a fresh draft) carries the budget, slots
        and KV left into the phases, so that a lemma can start them mid-loop."""
        d = Draft(s) if d is None else d
        left_after: dict[str, z3.ArithRef] = {}
        for phase in self.phases():
            phase(s, d)
            left_after[phase.__name__] = d.left
        plan = tuple(SymEntry(*parts) for parts in zip(d.decode, d.chunk, d.admit, d.first_chunk, strict=True))
        requests, emits = [], []
        free_kv = d.free_kv
        for entry, r in zip(plan, s.requests, strict=True):
            num_prefilled = d.let("num_prefilled", r.num_prefilled + entry.prefill)
            tokens = self.emitted(entry, r, num_prefilled)
            num_emitted = d.let("num_emitted", r.num_emitted + tokens)
            emits.append(tokens > 0)
            released = self.releases(entry, r, num_prefilled, num_emitted, tokens)
            free_kv = d.let("free_kv", free_kv + z3.If(released, r.reservation, 0))
            requests.append(SymRequest(
                r.arrived, z3.Or(r.admitted, entry.admit), r.prompt_len, r.max_new, num_prefilled, num_emitted
            ))
        after = SymState(self.after_config(s.config), tuple(requests), free_kv)
        return SymStep(s, plan, tuple(emits), after, d.free_kv, z3.And(d.defs), left_after)
