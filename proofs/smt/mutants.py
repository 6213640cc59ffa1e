"""Wrong policies in Z3, each changing one phase of `Policy` the way a scheduler in
`stallfree.faults` changes one step: the negative controls of the theorems. Each names the theorem
it is made to break (`breaks`); a theorem that held on its control would prove nothing."""

from __future__ import annotations

from collections.abc import Callable

import z3

from .policy import Draft, Policy, SymEntry, smin
from .symbolic import SymConfig, SymRequest, SymState


class FreeDecodes(Policy):
    """Decodes cost nothing: prefill gets the whole budget on top of them."""

    breaks = "BUDGET"

    def plan_decodes(self, s: SymState, d: Draft) -> None:
        for i, r in enumerate(s.requests):
            d.decode[i] = r.ready


class AdmitWithoutBudget(Policy):
    """Admits the head even when no budget is left, giving it an entry of 0 tokens."""

    breaks = "ONE-ENTRY"

    def fits(self, r: SymRequest, s: SymState, d: Draft) -> z3.BoolRef:
        return z3.And(d.num_running < s.config.max_seqs, r.reservation <= d.free_kv)


class IgnoreSlots(Policy):
    """Admits whenever the KV fits, however many requests already run."""

    breaks = "SLOTS"

    def fits(self, r: SymRequest, s: SymState, d: Draft) -> z3.BoolRef:
        return z3.And(d.left > 0, r.reservation <= d.free_kv)


class IgnoreKV(Policy):
    """Admits whenever a slot is free, whatever KV is left."""

    breaks = "KV"

    def fits(self, r: SymRequest, s: SymState, d: Draft) -> z3.BoolRef:
        return z3.And(d.left > 0, d.num_running < s.config.max_seqs)


class EarlyRelease(Policy):
    """Returns a request's KV as soon as its prompt is done, before its tokens are out."""

    breaks = "KV"  # its return part: the loop theorem "KV (any N, return)"

    def releases(self, entry: SymEntry, r: SymRequest, num_prefilled: z3.ArithRef, num_emitted: z3.ArithRef,
                 tokens: z3.ArithRef) -> z3.BoolRef:
        return z3.And(entry.prefill > 0, num_prefilled == r.prompt_len)


class RepeatPosition(Policy):
    """Each chunk after the first starts one position early, running a prompt position twice."""

    breaks = "PREFILL-ONCE"

    def chunk(self, r: SymRequest, left: z3.ArithRef) -> z3.ArithRef:
        return smin(r.prompt_len - r.num_prefilled + z3.If(r.num_prefilled > 0, 1, 0), left)


class LateFirstToken(Policy):
    """The chunk that completes a prompt emits nothing; the first token waits for the next step."""

    breaks = "FIRST-TOKEN"

    def emitted(self, entry: SymEntry, r: SymRequest, num_prefilled: z3.ArithRef) -> z3.ArithRef:
        return z3.If(entry.decode, 1, 0)


class DoubleFirstToken(Policy):
    """The chunk that completes a prompt counts its token twice."""

    breaks = "TOKENS"

    def emitted(self, entry: SymEntry, r: SymRequest, num_prefilled: z3.ArithRef) -> z3.ArithRef:
        completes = z3.And(entry.prefill > 0, num_prefilled == r.prompt_len)
        return z3.If(completes, z3.If(r.max_new >= 2, 2, 1), super().emitted(entry, r, num_prefilled))


class SkipAhead(Policy):
    """When the head of the queue does not fit, admits a later request that does."""

    breaks = "FCFS"

    def stops(self, stopped: z3.BoolRef, r: SymRequest, admitted: z3.BoolRef) -> z3.BoolRef:
        return stopped


class PartialsBeforeDecodes(Policy):
    """Partial prompts take the budget first; decodes get what is left."""

    breaks = "DECODE-FIRST"

    def phases(self) -> tuple[Callable[[SymState, Draft], None], ...]:
        return (self.plan_partials, self.plan_decodes, self.admit)


class AdmitBeforePartial(Policy):
    """New requests are admitted before the partial prompt gets its chunk."""

    breaks = "PARTIAL-NEXT"

    def phases(self) -> tuple[Callable[[SymState, Draft], None], ...]:
        return (self.plan_decodes, self.admit, self.plan_partials)


class OneAdmissionPerStep(Policy):
    """Admits at most one request a step, leaving budget unused while the next one fits."""

    breaks = "WORK-CONSERVING"

    def stops(self, stopped: z3.BoolRef, r: SymRequest, admitted: z3.BoolRef) -> z3.BoolRef:
        return z3.Or(stopped, r.waiting)


class StrictFit(Policy):
    """Admits only a request whose reservation is strictly below the free KV: one that needs all of
    K waits forever, and the scheduler plans empty steps."""

    breaks = "PROGRESS"

    def fits(self, r: SymRequest, s: SymState, d: Draft) -> z3.BoolRef:
        return z3.And(d.left > 0, d.num_running < s.config.max_seqs, r.reservation < d.free_kv)


class AcceptNeverFit(Policy):
    """add() checks the fields but not the KV capacity: a request that never fits is queued."""

    breaks = "NEVER-FIT"

    def accepts(self, request: SymRequest, config: SymConfig) -> z3.BoolRef:
        return z3.BoolVal(True)


class ChangingBudget(Policy):
    """The budget may change between steps: READY-WITHIN-BUDGET holds only while it is fixed."""

    breaks = "READY-WITHIN-BUDGET"

    def after_config(self, config: SymConfig) -> SymConfig:
        return SymConfig(z3.Int("B.next"), config.max_seqs, config.kv_tokens)


class LeakyStart(Policy):
    """A new scheduler starts with one KV token fewer than its capacity."""

    breaks = "INIT"

    def initial_free_kv(self, config: SymConfig) -> z3.ArithRef:
        return config.kv_tokens - 1


MUTANTS: dict[str, type[Policy]] = {
    cls.__name__: cls
    for cls in (
        FreeDecodes, AdmitWithoutBudget, IgnoreSlots, IgnoreKV, EarlyRelease, RepeatPosition, LateFirstToken,
        DoubleFirstToken, SkipAhead, PartialsBeforeDecodes, AdmitBeforePartial, OneAdmissionPerStep, StrictFit,
        AcceptNeverFit, ChangingBudget, LeakyStart,
    )
}
