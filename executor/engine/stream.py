"""What the executor knows of one admitted request: its prompt tokens, its KV cells, how far its
prompt has run, the tokens it has emitted. The executor's own account, kept apart from the
scheduler's, so that the two can be compared on the real path."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..layers.seeds import generator


@dataclass(slots=True)
class Stream:
    rid: int
    prompt: list[int]  # the prompt's token ids
    max_new: int
    cells: list[int]  # KV cell of each position: prompt_len + max_new of them, from admission
    admitted_at: int  # step
    num_prefilled: int = 0  # prompt positions run so far
    outputs: list[int] = field(default_factory=list)  # emitted token ids
    logits: list[torch.Tensor] = field(default_factory=list)  # the logits each output came from (kept on request)
    emitted_at: list[int] = field(default_factory=list)  # step of each output
    times: list[float] = field(default_factory=list)  # wall time (perf_counter) of each output
    finish_reason: str | None = None  # once ended: "length" (max_new), "stop" (end token) or "cancel"
    target: int = 0  # positions this residency prefills: the prompt, plus the outputs after a preemption
    num_preemptions: int = 0
    num_cached: int = 0  # prefill positions taken from cached blocks, over its residencies (prefix design)

    def __post_init__(self) -> None:
        self.target = self.target or len(self.prompt)

    @property
    def prompt_len(self) -> int:
        return len(self.prompt)

    @property
    def is_ready(self) -> bool:
        """Prefill done, tokens still owed: it must get a decode this step (rule DECODE-FIRST)."""
        return self.num_prefilled == self.target and len(self.outputs) < self.max_new

    @property
    def is_finished(self) -> bool:
        return len(self.outputs) == self.max_new

    @property
    def next_position(self) -> int:
        """The position of this stream's next input token: a prefill position, or after the prefill
        the position of the latest output (fed back as the next decode input)."""
        return self.num_prefilled if self.num_prefilled < self.target else self.prompt_len + len(self.outputs) - 1

    def prefill(self, start: int, n: int) -> list[int]:
        """The tokens of prefill positions [start, start + n): the prompt, then the emitted tokens
        (a request recomputed after a preemption prefills both)."""
        return (self.prompt + self.outputs)[start:start + n]

    def forget(self) -> None:
        """Preempted: its KV is gone; it prefills its prompt and its outputs again when re-admitted."""
        self.cells = []
        self.num_prefilled = 0
        self.target = self.prompt_len + len(self.outputs)
        self.num_preemptions += 1


def prompt_tokens(seed: int, rid: int, prompt_len: int, vocab: int) -> list[int]:
    """A request's prompt, drawn from the seed and its rid (the same whatever the batching)."""
    gen = generator(seed * 7919 + rid)
    return torch.randint(0, vocab, (prompt_len,), generator=gen).tolist()
