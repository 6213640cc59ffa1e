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
    def schedule(self) -> list[tuple[int, int]]:
        plan: list[tuple[int, int]] = []
        self.admit_whole(plan)
        if not plan:
            self.plan_decodes(plan, self.config.token_budget)
        self.pending = plan  # as Stepwise.schedule: a cancel while it is pending waits for complete()
        return plan

    def admit_whole(self, plan: list[tuple[int, int]]) -> None:
        left = self.config.token_budget
        while self.waiting:
            seq = self.next_admission()
            if seq is None or (plan and seq.request.prompt_len > left):
                return
            self.take(seq)
            plan.append((seq.rid, seq.request.prompt_len))
            left -= seq.request.prompt_len
