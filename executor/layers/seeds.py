"""Seeded generators. Every draw of a run (weights, prompts, sampling noise) comes from a generator
seeded by a mix of the run's seed and the draw's identity, so a draw is the same whatever order or
batch it is made in. The mix is taken modulo 2^64, the range torch's seeds take: no seed overflows."""

from __future__ import annotations

import torch

SEED_RANGE = 2**64


def generator(mix: int, device: torch.device | str = "cpu") -> torch.Generator:
    return torch.Generator(device=device).manual_seed(mix % SEED_RANGE)
