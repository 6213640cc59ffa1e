"""Wrong Z3 policies planted for the guard of the policy-level induction rows (`phase_guard`), from the
third review of LIVENESS (induction, any N): each read holds there before, or crashed the row, while
its own step (or its own first state) starves a request.

- `AliasIdle`: `phases()` hands `Policy.step` an idle callable named `plan_decodes` (it spends the whole
  budget, plans nothing); the class's own `plan_decodes`, which the rows ran, is the reference's.
- `SpuriousAlias` (correct, a control): `phases()` hands `Policy.step` another instance's reference
  decodes; its own `plan_decodes`, which the rows ran, idles. Its step is the reference's: it must not
  read BROKEN.
- `NoPartials` (no partials phase) and `ExtraPhase` (a fourth, do-nothing phase): a phase the rows
  have no loop for, or a loop with no phase.
- `EraseDecodes`: `plan_partials` also writes every decode entry False; `EraseChunks`: `admit` also
  writes every chunk entry 0. Every phase is in FOLD's frame; the later write replaces the earlier
  phase's entry in the plan `Policy.step` completes. `EraseDecodesOutsideFrame`: EraseDecodes' partials
  behind a statement FOLD's frame refuses.
- `InitialDrained`: `initial()` (a new scheduler's state) has no free KV; `initial_at` and
  `initial_free_kv` are the reference's, and they are all INIT (any N) reads.
- `CountingIdle`: its decodes plan nothing past the 40th iteration in the process, counted in a
  class-level list (FOLD's frame compared attributes by identity only).
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from .policy import Draft, Policy
from .symbolic import SymState

Phase = Callable[[SymState, Draft], None]


class AliasIdle(Policy):
    """Its step's first phase, named plan_decodes, spends the budget and plans nothing."""

    breaks = "LIVENESS"

    def _idle(self, s: SymState, d: Draft) -> None:
        for _i, _r in enumerate(s.requests):
            d.left = d.let("left", z3.IntVal(0))

    _idle.__name__ = "plan_decodes"

    def phases(self) -> tuple[Phase, ...]:
        return (self._idle, self.plan_partials, self.admit)


class SpuriousAlias(Policy):
    """Its own plan_decodes idles; its step runs the reference's (another instance's)."""

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        for _i, _r in enumerate(s.requests):
            d.left = d.let("left", z3.IntVal(0))

    def phases(self) -> tuple[Phase, ...]:
        return (Policy().plan_decodes, self.plan_partials, self.admit)


class NoPartials(Policy):
    """Decodes and admission only: a partial prompt never gets another chunk."""

    breaks = "LIVENESS"

    def phases(self) -> tuple[Phase, ...]:
        return (self.plan_decodes, self.admit)


class ExtraPhase(Policy):
    """The reference's phases and a fourth that plans nothing."""

    def plan_nothing(self, s: SymState, d: Draft) -> None:
        for _i, _r in enumerate(s.requests):
            d.left = d.let("left", d.left)

    def phases(self) -> tuple[Phase, ...]:
        return (self.plan_decodes, self.plan_partials, self.admit, self.plan_nothing)


class EraseDecodes(Policy):
    """plan_partials also writes every decode entry False: a ready request never emits again."""

    breaks = "LIVENESS"

    def plan_partials(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            n = d.let("chunk", z3.If(z3.And(r.partial, d.left > 0), self.chunk(r, d.left), 0))
            d.chunk[i] = n
            d.decode[i] = z3.BoolVal(False)
            d.left = d.let("left", d.left - n)


class EraseDecodesOutsideFrame(EraseDecodes):
    """EraseDecodes' partials behind a statement before the loop, which FOLD's frame refuses: the guard
    reads the overwrite off the phase as the step runs it on a few requests."""

    def plan_partials(self, s: SymState, d: Draft) -> None:
        if not s.requests:
            return
        EraseDecodes.plan_partials(self, s, d)


class EraseChunks(Policy):
    """admit also writes every chunk entry 0: a partial prompt never progresses."""

    breaks = "LIVENESS"

    def admit(self, s: SymState, d: Draft) -> None:
        super().admit(s, d)
        for i in range(len(s.requests)):
            d.chunk[i] = z3.IntVal(0)


class InitialDrained(Policy):
    """A new scheduler has no free KV: nothing is ever admitted."""

    breaks = "LIVENESS"

    def initial(self, s: SymState) -> z3.BoolRef:
        facts = [self.initial_at(r, z3.IntVal(i)) for i, r in enumerate(s.requests)]
        return z3.And(*facts, s.free_kv == 0)


IDLE_AFTER = 40  # the iterations, in one process, after which CountingIdle's decodes plan nothing


class CountingIdle(Policy):
    """Its decodes count their iterations in a class-level list (the same object after each, so an
    identity check passes) and plan no decode past the 40th in the process: FOLD's frame refuses a
    mutable attribute."""

    breaks = "LIVENESS"
    seen: list[None] = []  # noqa: RUF012 -- the plant: a mutable class attribute

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            self.seen.append(None)
            take = z3.And(r.ready, d.left > 0, z3.BoolVal(len(self.seen) <= IDLE_AFTER))
            d.decode[i] = take
            d.left = d.let("left", z3.If(take, d.left - 1, d.left))


PLANTED: dict[str, type[Policy]] = {cls.__name__: cls for cls in (
    AliasIdle, NoPartials, ExtraPhase, EraseDecodes, EraseDecodesOutsideFrame, EraseChunks, InitialDrained,
    CountingIdle)}
CORRECT: dict[str, type[Policy]] = {"SpuriousAlias": SpuriousAlias}  # a correct step the rows must not refute
