"""Wrong schedulers for the aligned contract (`stallfree.spec.variants.aligned`), one per rule it adds or widens."""

from __future__ import annotations

from stallfree.variants.aligned import Aligned
from stallfree.variants.stepwise import Stepwise, StepwiseSequence


class UnalignedFirstChunk(Aligned):
    """Aligns the chunks of partial prompts but not an admission's first chunk: a new request's first
    chunk is min(prompt_len, left), ending inside a block whenever it does not finish the prompt."""

    breaks = "ALIGNED"

    def start(self, seq: StepwiseSequence, plan: list[tuple[int, int]], left: int) -> int:
        return Stepwise.start(self, seq, plan, left)

    def admit(self, plan: list[tuple[int, int]], left: int) -> int:
        return Stepwise.admit(self, plan, left)


class AdmitPastUnfinished(Aligned):
    """Lets the budget an unfinished aligned chunk leaves over go on to admissions: whole small
    prompts are admitted behind a partial prompt that still waits for its next block."""

    breaks = "ALIGNED-PARTIAL-NEXT"

    def plan_partials(self, plan: list[tuple[int, int]], left: int) -> int:
        for seq in self.running.values():
            if not seq.is_ready:
                n = self.chunk(seq, left)
                if n:
                    plan.append((seq.rid, n))
                left -= n
        return left


class OneAlignedAdmission(Aligned):
    """Admits at most one request a step, leaving budget unused while the next one fits."""

    breaks = "ALIGNED-WORK-CONSERVING"

    def admit(self, plan: list[tuple[int, int]], left: int) -> int:
        seq = self.next_admission() if left and self.waiting else None
        if seq is None or self.chunk(seq, left) == 0:
            return left
        return self.start(seq, plan, left)


ALIGNED_FAULTS: dict[str, type[Aligned]] = {
    cls.breaks: cls for cls in (UnalignedFirstChunk, AdmitPastUnfinished, OneAlignedAdmission)
}
