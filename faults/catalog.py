"""Deliberately wrong schedulers: each breaks one rule, named in `breaks`, by overriding one step
of `Stepwise`. They are the negative controls: every check of the rules (monitor, conformance kit,
model checker, proofs, executor) must catch them, naming that rule."""

from __future__ import annotations

from stallfree.spec import Request
from stallfree.variants.stepwise import Stepwise, StepwiseSequence

from .lifecycle import PlansCancelled


class FreeDecodes(Stepwise):
    """Decodes cost nothing: prefill gets the whole budget on top of them."""

    breaks = "BUDGET"

    def plan_decodes(self, plan: list[tuple[int, int]], left: int) -> int:
        super().plan_decodes(plan, left)
        return left


class SplitChunk(Stepwise):
    """A partial prompt's chunk goes out as two entries for the same request."""

    breaks = "ONE-ENTRY"

    def plan_partials(self, plan: list[tuple[int, int]], left: int) -> int:
        for seq in self.running.values():
            if left and not seq.is_ready:
                n = self.chunk(seq, left)
                plan.extend([(seq.rid, n - n // 2), (seq.rid, n // 2)] if n >= 2 else [(seq.rid, n)])
                left -= n
        return left


class IgnoreSlots(Stepwise):
    """Admits whenever the KV fits, however many requests already run."""

    breaks = "SLOTS"

    def fits(self, seq: StepwiseSequence) -> bool:
        return seq.request.reservation <= self.free_kv


class EarlyRelease(Stepwise):
    """Returns a request's KV as soon as its prompt is done, before its tokens are out."""

    breaks = "KV"

    def on_prompt_done(self, seq: StepwiseSequence, emitted: list[int]) -> None:
        self.free_kv += seq.request.reservation
        super().on_prompt_done(seq, emitted)

    def release(self, seq: StepwiseSequence) -> None:
        del self.running[seq.rid]


class RepeatPosition(Stepwise):
    """Each chunk after the first starts one position early, running a prompt position twice."""

    breaks = "PREFILL-ONCE"

    def chunk(self, seq: StepwiseSequence, left: int) -> int:
        return min(seq.request.prompt_len - seq.num_prefilled + (seq.num_prefilled > 0), left)


class LateFirstToken(Stepwise):
    """The chunk that completes a prompt emits nothing; the first token waits for the next step."""

    breaks = "FIRST-TOKEN"

    def on_prompt_done(self, seq: StepwiseSequence, emitted: list[int]) -> None:
        pass


class DoubleFirstToken(Stepwise):
    """The chunk that completes a prompt reports its token twice, counting it twice."""

    breaks = "TOKENS"

    def on_prompt_done(self, seq: StepwiseSequence, emitted: list[int]) -> None:
        if seq.request.max_new >= 2:
            seq.num_emitted += 1
            emitted.append(seq.rid)
        self.emit(seq, emitted)


class SkipAhead(Stepwise):
    """When the head of the queue does not fit, admits a later request that does."""

    breaks = "FCFS"

    def next_admission(self) -> StepwiseSequence | None:
        return next((seq for seq in self.waiting if self.fits(seq)), None)


class PartialsBeforeDecodes(Stepwise):
    """Partial prompts take the budget first; decodes get what is left."""

    breaks = "DECODE-FIRST"

    def phases(self):  # type: ignore[no-untyped-def]
        return (self.plan_partials, self.plan_decodes, self.admit)


class AdmitBeforePartial(Stepwise):
    """New requests are admitted before the partial prompt gets its chunk."""

    breaks = "PARTIAL-NEXT"

    def phases(self):  # type: ignore[no-untyped-def]
        return (self.plan_decodes, self.admit, self.plan_partials)


class OneAdmissionPerStep(Stepwise):
    """Admits at most one request a step, leaving budget unused while the next one fits."""

    breaks = "WORK-CONSERVING"

    def admit(self, plan: list[tuple[int, int]], left: int) -> int:
        seq = self.next_admission() if left and self.waiting else None
        return self.start(seq, plan, left) if seq is not None else left


class AcceptNeverFit(Stepwise):
    """Checks the fields but not the KV capacity: a never-fit request is queued, to block forever."""

    breaks = "NEVER-FIT"

    def validate(self, rid: int, prompt_len: int, max_new: int) -> Request:
        return Request(rid, prompt_len, max_new)


class PeriodicStall(Stepwise):
    """Every fourth step plans nothing, as if a housekeeping pass took the step."""

    breaks = "PROGRESS"

    def schedule(self) -> list[tuple[int, int]]:
        if self.num_steps % 4 == 3:
            return []
        return super().schedule()


FAULTS: dict[str, type[Stepwise]] = {
    cls.breaks: cls
    for cls in (
        FreeDecodes, SplitChunk, IgnoreSlots, EarlyRelease, RepeatPosition, LateFirstToken, DoubleFirstToken,
        PlansCancelled, SkipAhead, PartialsBeforeDecodes, AdmitBeforePartial, OneAdmissionPerStep, AcceptNeverFit,
        PeriodicStall,
    )
}


class OvercommitKV:
    """Admits whenever a slot is free, whatever KV is left, and shows no `free_kv`: the monitor's
    check after the step has nothing to compare, so only KV's plan check can see it. A second fault
    for KV (EarlyRelease, in FAULTS, returns a reservation early and shows it)."""

    breaks = "KV"

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self._inner = _IgnoreKV(token_budget, max_seqs, kv_tokens)

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        self._inner.add(rid, prompt_len, max_new)

    def schedule(self) -> list[tuple[int, int]]:
        return self._inner.schedule()

    def complete(self, plan: list[tuple[int, int]]) -> list[int]:
        return self._inner.complete(plan)


class _IgnoreKV(Stepwise):
    def fits(self, seq: StepwiseSequence) -> bool:
        return len(self.running) < self.config.max_seqs


# Faults beyond the one per rule: each breaks the rule in `breaks` in a way the one in FAULTS does not.
MORE_FAULTS: tuple[type, ...] = (OvercommitKV,)
