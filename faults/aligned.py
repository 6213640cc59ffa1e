"""A wrong scheduler for the aligned contract (`stallfree.spec.aligned`): the negative control of ALIGNED."""

from __future__ import annotations

from stallfree.variants.aligned import Aligned
from stallfree.variants.stepwise import Seq, Stepwise


class UnalignedFirstChunk(Aligned):
    """Aligns the chunks of partial prompts but not an admission's first chunk: a new request's first
    chunk is min(prompt_len, left), ending inside a block whenever it does not finish the prompt."""

    breaks = "ALIGNED"

    def start(self, seq: Seq, plan: list[tuple[int, int]], left: int) -> int:
        return Stepwise.start(self, seq, plan, left)

    def admit(self, plan: list[tuple[int, int]], left: int) -> int:
        return Stepwise.admit(self, plan, left)
