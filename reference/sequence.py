"""A request inside the reference scheduler: its progress through prefill and decode."""

from __future__ import annotations

from dataclasses import dataclass, field

from stallfree.spec.types import Entry, Request


@dataclass(slots=True)
class Sequence:
    """Progress of one request. Its token count is derived, not stored: see `num_emitted`."""

    request: Request
    num_prefilled: int = 0  # prompt positions already run (the next chunk starts here)
    first_token_step: int | None = None  # the step whose chunk completed the prompt
    decode: Entry = field(init=False)  # its decode entry, built once: a decode is always (rid, 1)

    def __post_init__(self) -> None:
        self.decode = Entry(self.request.rid, 1)

    @property
    def rid(self) -> int:
        return self.request.rid

    @property
    def num_remaining_prompt(self) -> int:
        return self.request.prompt_len - self.num_prefilled

    def num_emitted(self, num_steps: int) -> int:
        """Tokens emitted after `num_steps` completed steps: the first on the step its prompt
        completed, then one every step, since every ready request is decoded every step
        (READY-WITHIN-BUDGET)."""
        if self.first_token_step is None:
            return 0
        return min(self.request.max_new, num_steps - self.first_token_step)
