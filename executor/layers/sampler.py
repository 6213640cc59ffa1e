"""Choosing a token from logits: greedy by default; with a temperature T, Gumbel-max sampling,
argmax(logits / T + g) with g Gumbel noise drawn from a generator seeded by (seed, rid, token index).

Gumbel-max draws exactly from softmax(logits / T), and writes sampling as an argmax over scores:
the unbatched reference replays a draw by adding the same noise to its own logits, and a token that
differs is judged like a greedy one (equal, a near tie within the logit tolerance, or a mismatch).
The noise depends on the request and the token index alone, never on the batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .seeds import generator

TINY = 1e-20  # keeps log(-log(u)) finite at u = 0


@dataclass(frozen=True, slots=True)
class Sampler:
    temperature: float = 0.0  # 0: greedy (argmax; ties to the lowest token id)
    seed: int = 0

    def scores(self, logits: torch.Tensor, rid: int, index: int) -> torch.Tensor:
        """logits [..., vocab] -> the scores whose argmax is the token: the logits themselves when
        greedy, else logits / T plus this request's noise for its `index`-th token."""
        if self.temperature == 0.0:
            return logits.float()
        gen = generator((self.seed * 1_000_003 + rid) * 65_537 + index)
        u = torch.rand(logits.shape[-1], generator=gen, dtype=torch.float64)
        gumbel = -torch.log(-torch.log(u.clamp(min=TINY)))
        return (logits.double().cpu() / self.temperature + gumbel).to(logits.device)

    def sample(self, logits: torch.Tensor, rid: int, index: int) -> int:
        """logits [vocab] -> token id."""
        return int(torch.argmax(self.scores(logits, rid, index)))
