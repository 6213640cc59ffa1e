"""A request inside the reference scheduler: its progress through prefill and decode."""

from __future__ import annotations

from dataclasses import dataclass, field

from stallfree.spec.types import Entry, Request


@dataclass(slots=True)
class Sequence:
    """Progress of one admitted or waiting request. Derived facts are properties, never stored."""

    request: Request
    num_prefilled: int = 0  # prompt positions already run (the next chunk starts here)
    num_emitted: int = 0  # output tokens emitted so far
    decode: Entry = field(init=False)  # its decode entry, built once: a decode is always (rid, 1)

    def __post_init__(self) -> None:
        self.decode = Entry(self.request.rid, 1)

    @property
    def rid(self) -> int:
        return self.request.rid

    @property
    def num_remaining_prompt(self) -> int:
        return self.request.prompt_len - self.num_prefilled

    @property
    def is_ready(self) -> bool:
        """Prompt done and tokens still to emit: it takes one decode token a step."""
        return self.num_prefilled == self.request.prompt_len

    @property
    def is_finished(self) -> bool:
        return self.num_emitted == self.request.max_new
