"""Deliberately wrong paged schedulers: each breaks one rule of the paged design, named in `breaks`,
by overriding one decision of `stallfree.paged.Scheduler`. The negative controls of the paged
monitor, the kit's `paged` profile, the paged state machine and the paged model check, all of which
iterate `PAGED_FAULTS`; `stallfree prove --scheduler paged --fault` selects one by its rule (the first
listed that breaks it) or by its name (`--fault StopIgnored`).

They run on blocks of 2 tokens with a watermark of one block (where the pool has one), so that small
workloads preempt and admission meets the watermark."""

from __future__ import annotations

from stallfree.paged import PagedPlan, Scheduler, blocks_for
from stallfree.paged.progress import Phase
from stallfree.paged.scheduler import PagedSequence


class PagedFault(Scheduler):
    """The paged scheduler on a small pool: 2-token blocks, a watermark of one block."""

    breaks = ""
    also: tuple[str, ...] = ()  # rules its runs may break before `breaks`, as consequences of its mistake

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, block_size=2, watermark=min(1, kv_tokens // 2))


def small(token_budget: int, max_seqs: int, kv_tokens: int) -> Scheduler:
    """The correct paged scheduler on the faults' pool: the control they are measured against."""
    return Scheduler(token_budget, max_seqs, kv_tokens, block_size=2, watermark=min(1, kv_tokens // 2))


small.design = "paged"  # type: ignore[attr-defined]


class LeakOnEnd(PagedFault):
    """A request that finishes, stops or is cancelled keeps its last block: it never returns to the pool."""

    breaks = "BLOCKS"

    def end(self, seq: PagedSequence, phase: Phase) -> None:
        held = min(seq.num_blocks, 1)
        super().end(seq, phase)
        self._free_blocks -= held


class IgnoreWatermark(PagedFault):
    """Admits the head whenever its first chunk fits the free blocks, the watermark forgotten."""

    breaks = "WATERMARK"

    def admits(self, seq: PagedSequence, n: int) -> bool:
        return self._free_blocks - blocks_for(n, self.block_size) >= 0


class RecomputeOneMore(PagedFault):
    """A re-admitted request's prefill counts its last emitted token twice: one position past its prompt
    and emitted tokens is run."""

    breaks = "RECOMPUTE"

    def preempt(self, seq: PagedSequence) -> None:
        super().preempt(seq)
        seq.target += 1


class OverRun(PagedFault):
    """Finishes a request one token late: it emits max_new + 1 tokens."""

    breaks = "TOKENS-KEPT"

    def last_token(self, seq: PagedSequence) -> int:
        return seq.request.max_new + 1


class CancelIgnored(PagedFault):
    """A cancel between steps is accepted and forgotten: the request runs on."""

    breaks = "CANCEL"

    def cancel(self, rid: object) -> None:
        if self._planned is not None or rid not in self._sequences:
            super().cancel(rid)


class RequeueAtBack(PagedFault):
    """A preempted request goes to the back of the waiting line, behind later arrivals."""

    breaks = "PREEMPT-ORDER"

    def preempt(self, seq: PagedSequence) -> None:
        super().preempt(seq)
        self._waiting.remove(seq)
        self._waiting.append(seq)


class PreemptOldest(PagedFault):
    """Preempts the oldest running request instead of the newest."""

    breaks = "PREEMPT-BOUND"

    def victim(self) -> PagedSequence:
        return self._running[next(iter(self._running))]


class AcceptTooLarge(PagedFault):
    """Accepts a request whose peak exceeds the pool less the watermark."""

    breaks = "NEVER-FIT"

    def fits_alone(self, peak: int) -> bool:
        return True


# The faults of stops and cancels, each also the negative control of the Z3 paged step's policy of the
# same name (`stallfree.proofs.smt.paged_step`: END, STOP-READY, CANCEL and BLOCKS through ends). They
# repeat rules the faults above break, through another path: a cancel, a stop, a token in mid-prefill.


class LeakOnCancel(PagedFault):
    """A cancelled request's blocks never return to the pool (a finished or stopped one's do)."""

    breaks = "BLOCKS"

    def end(self, seq: PagedSequence, phase: Phase) -> None:
        held = seq.num_blocks
        super().end(seq, phase)
        if phase is Phase.CANCELLED:
            self._free_blocks -= held


class StopIgnored(PagedFault):
    """A stop is accepted and forgotten: the request runs on to its max_new-th token."""

    breaks = "TOKENS-KEPT"

    def complete(self, plan: PagedPlan, stopped: object = ()) -> tuple[int, ...]:
        return super().complete(plan)


class EarlyToken(PagedFault):
    """Every prefill chunk emits a token, its prefill done or not (a stop could then end it mid-prefill).
    The token is counted, not reported among the step's emitted rids, so the paged monitor sees a request
    with more tokens than it was given (TOKENS-KEPT), and at times what follows from it first (`also`)."""

    breaks = "TOKENS-KEPT"
    also = ("RECOMPUTE", "BLOCKS", "WATERMARK")  # a re-prefill or the pool counts the token it should not have

    def prefilled(self, chunks: tuple[tuple[int, int], ...]) -> None:
        for rid, _ in chunks:
            seq = self._partial.get(rid)
            if seq is not None:  # still partial after its chunk
                seq.stored_emitted += 1


END_FAULTS: tuple[type[PagedFault], ...] = (LeakOnCancel, StopIgnored, EarlyToken)
PAGED_FAULTS: tuple[type[PagedFault], ...] = (
    LeakOnEnd, IgnoreWatermark, RecomputeOneMore, OverRun, CancelIgnored, RequeueAtBack, PreemptOldest,
    AcceptTooLarge, *END_FAULTS,
)
