"""Choosing a token from logits: greedy by default; with a temperature, a draw from a generator
seeded by (seed, rid, token index), so a request's draws do not depend on what it was batched with."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True, slots=True)
class Sampler:
    temperature: float = 0.0  # 0: greedy (argmax; ties to the lowest token id)
    seed: int = 0

    def sample(self, logits: torch.Tensor, rid: int, index: int) -> int:
        """logits [vocab] -> token id."""
        if self.temperature == 0.0:
            return int(torch.argmax(logits))
        gen = torch.Generator().manual_seed((self.seed * 1_000_003 + rid) * 65_537 + index)
        probs = torch.softmax(logits.float().cpu() / self.temperature, dim=-1)
        return int(torch.multinomial(probs, 1, generator=gen))
