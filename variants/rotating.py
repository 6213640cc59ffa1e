"""A budget that changes while running, and rotation among the ready requests when they outnumber it.

`Resizable` is the contract's policy with `set_budget(B)`: decodes oldest first, so after a drop
below the ready count the newest ready requests get nothing until the oldest finish (it keeps the
`budget-change` contract and breaks DECODE-FAIR: the negative control of rotation). `Rotating` gives
the B decodes to the ready requests that waited longest since their last token (the `rotation`
contract, `stallfree.spec.variants.budget_change`): the start of the decodes rotates through the ready
requests, and none goes more than ceil(R/B) - 1 steps in a row without a token.
"""

from __future__ import annotations

from stallfree.spec import Config

from .batched import BatchedResizable, BatchedSequence
from .stepwise import Stepwise, StepwiseSequence


class Resizable(Stepwise):
    """The policy with a budget that may be set between steps (it binds from the next schedule())."""

    def set_budget(self, token_budget: int) -> None:
        """Raises (state unchanged) unless `token_budget` is an int >= 1."""
        self.config = Config(token_budget, self.config.max_seqs, self.config.kv_tokens)


class Rotating(Resizable):
    """When the ready requests outnumber the budget, the decodes go to those that waited longest."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.last_token: dict[int, int] = {}  # ready rid -> the step of its last token

    def plan_decodes(self, plan: list[tuple[int, int]], left: int) -> int:
        ready = [seq for seq in self.running.values() if seq.is_ready]
        if len(ready) > left:  # rare: only after a budget drop; sorted is stable, so ties go by admission
            last = self.last_token
            ready = sorted(ready, key=lambda seq: last[seq.rid])[:left]
        plan.extend((seq.rid, 1) for seq in ready)
        return left - len(ready)

    def emit(self, seq: StepwiseSequence, emitted: list[int]) -> None:
        self.last_token[seq.rid] = self.num_steps
        super().emit(seq, emitted)

    def release(self, seq: StepwiseSequence) -> None:
        self.last_token.pop(seq.rid, None)  # none yet for a request stopped or cancelled before its first token
        super().release(seq)


class BatchedRotating(BatchedResizable):
    """Rotation in the reference's incremental form (`batched`): the one the simulator runs.

    A step that decodes every ready request gives them all one last token, so their order is the
    admission order; through a run of short steps the order is kept as a list: each step serves its
    head and puts the served at the back, among themselves by admission (their last tokens tie)."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.order: list[tuple[int, int]] | None = None  # the ready decodes, longest waiting first

    def over_budget(self, left: int) -> list[tuple[int, int]]:
        order = self.order if self.order is not None else list(self.ready.values())
        served = order[:left]
        running = self.running
        self.order = order[left:] + sorted(served, key=lambda decode: running[decode[0]].rank)
        return served

    def on_full_step(self, step: int) -> None:
        self.order = None

    def on_end(self, seq: BatchedSequence) -> None:
        if self.order is not None:
            rid = seq.request.rid
            self.order = [decode for decode in self.order if decode[0] != rid]

    def on_short_step(self, step: int, decoded: list[int]) -> None:
        if self.order is not None and len(self.order) != len(self.ready):  # some finished
            ready = self.ready
            self.order = [decode for decode in self.order if decode[0] in ready]
