"""Prefill-first without chunking: the policy continuous batching had before chunked prefill.

A step either prefills or decodes, never both. While the head of the queue fits (a slot and its whole
reservation), the step runs whole prompts, first come first served, as many as the budget holds, and
always at least one: a prompt longer than the budget runs alone in a step of its own (so this
variant breaks BUDGET by design). Only a step with nothing to admit runs the decodes, and every
running stream waits for each prefill step, however long its prompt.
"""

from __future__ import annotations

from .stepwise import Stepwise


class UnchunkedPrefillFirst(Stepwise):
    def phases(self):  # type: ignore[no-untyped-def]
        return (self.prefill_or_decode,)

    def prefill_or_decode(self, plan: list[tuple[int, int]], left: int) -> int:
        """The step's one phase: whole prompts while the head fits; the decodes only if none was admitted."""
        self.admit_whole(plan)
        return self.plan_decodes(plan, left) if not plan else 0

    def admit_whole(self, plan: list[tuple[int, int]]) -> None:
        left = self.config.token_budget
        while self.waiting:
            seq = self.next_admission()
            if seq is None or (plan and seq.request.prompt_len > left):
                return
            self.take(seq)
            plan.append((seq.rid, seq.request.prompt_len))
            left -= seq.request.prompt_len
