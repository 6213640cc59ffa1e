"""Tensor-parallel layers: the model is built from these and knows nothing else of parallelism.

A column-parallel layer holds a slice of the output features and needs no communication; a
row-parallel layer holds a slice of the input features and sums its partial products over ranks
(the all-reduce is in its forward, nowhere else; with fp8 weights a small all-reduce of each
token's largest magnitude comes first, so every rank quantizes its slice with the whole row's
scale). Weights arrive whole (`load`) and each layer takes its own shard; FP8 weights are quantized
whole first, so every shard carries the scales of the full rows and a TP=4 model holds exactly the
TP=1 model's numbers.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod

import torch
from torch import nn

from .fp8 import FP8, linear, quantize_rows, row_scale, unpack
from .group import Group


class ParallelLinear(nn.Module, metaclass=ABCMeta):
    """A linear layer's shard: weight [out_local, in_local] (fp8 with scale [1, out_local], or plain)."""

    def __init__(self, in_features: int, out_features: int, group: Group, dtype: torch.dtype) -> None:
        super().__init__()
        self.group = group
        self.in_features, self.out_features = in_features, out_features
        shape = self.shard_shape(in_features, out_features, group.world_size)
        self.weight = nn.Parameter(torch.empty(shape, dtype=dtype), requires_grad=False)
        scale = torch.ones(1, shape[0], dtype=torch.float32) if dtype == FP8 else None
        self.scale: torch.Tensor | None
        self.register_buffer("scale", scale)  # [1, out_local]: fp8 weights only
        self.unpacked: torch.Tensor | None = None  # [out_local, in_local] float32: fp8 on the CPU only
        self.use_scaled_mm = False  # True: fp8 through torch._scaled_mm even on the CPU (tests compare)

    @abstractmethod
    def shard_shape(self, in_features: int, out_features: int, world: int) -> tuple[int, int]:
        """This rank's (out_local, in_local): the column and row layers split different sides."""

    def kernel_weight(self) -> torch.Tensor | None:
        """The unpacked fp8 weight where the table kernel serves (see fp8.py); None for _scaled_mm."""
        return None if self.use_scaled_mm else self.unpacked

    @abstractmethod
    def shard(self, full: torch.Tensor) -> torch.Tensor:
        """This rank's slice of the whole weight [out, in]."""

    def load(self, full: torch.Tensor) -> None:
        """Take this rank's shard of the whole weight [out, in] (quantizing whole rows first for fp8)."""
        if tuple(full.shape) != (self.out_features, self.in_features):
            raise ValueError(f"weight shape {tuple(full.shape)} != ({self.out_features}, {self.in_features})")
        full = full.to(self.weight.device)
        if self.weight.dtype == FP8:
            q, scale = quantize_rows(full)  # [out, in], [out, 1]
            self.weight.data = self.shard(q.view(torch.uint8)).contiguous().view(FP8)
            assert self.scale is not None
            rows = scale.t().contiguous()  # [1, out]
            self.scale.copy_(rows if isinstance(self, RowParallelLinear) else self.shard(scale).t())
            if self.weight.device.type == "cpu":
                self.unpacked = unpack(self.weight.data)
        else:
            self.weight.data.copy_(self.shard(full).to(self.weight.dtype))


class ColumnParallelLinear(ParallelLinear):
    """Output features split over ranks: [T, in] -> [T, out / world]. No communication."""

    def shard_shape(self, in_features: int, out_features: int, world: int) -> tuple[int, int]:
        return out_features // world, in_features

    def shard(self, full: torch.Tensor) -> torch.Tensor:
        n = self.out_features // self.group.world_size
        return full[self.group.rank * n:(self.group.rank + 1) * n]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.scale, self.kernel_weight())  # [T, out_local]


class RowParallelLinear(ParallelLinear):
    """Input features split over ranks: [T, in / world] -> [T, out], summed over ranks."""

    def shard_shape(self, in_features: int, out_features: int, world: int) -> tuple[int, int]:
        return out_features, in_features // world

    def shard(self, full: torch.Tensor) -> torch.Tensor:
        n = self.in_features // self.group.world_size
        return full[:, self.group.rank * n:(self.group.rank + 1) * n]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_scale = None
        if self.weight.dtype == FP8 and self.group.world_size > 1:
            # Quantize each token's slice with the scale of its whole row (the largest magnitude
            # over all ranks), so the products summed below are exactly one rank's products.
            x_scale = row_scale(self.group.all_reduce_max(x.abs().amax(dim=-1, keepdim=True).float()))  # [T, 1]
        partial = linear(x, self.weight, self.scale, self.kernel_weight(), x_scale)  # [T, out]: this rank's share
        return self.group.all_reduce(partial)


class VocabParallelEmbedding(nn.Module):
    """Vocab rows split over ranks: each looks up the ids it holds, zeros for the rest, then a sum."""

    def __init__(self, vocab: int, hidden: int, group: Group, dtype: torch.dtype) -> None:
        super().__init__()
        self.group = group
        self.vocab = vocab
        self.num_local = vocab // group.world_size
        self.start = group.rank * self.num_local
        self.weight = nn.Parameter(torch.empty(self.num_local, hidden, dtype=dtype), requires_grad=False)

    def load(self, full: torch.Tensor) -> None:
        self.weight.data.copy_(full[self.start:self.start + self.num_local].to(self.weight))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        local = ids - self.start  # [T]
        mine = (local >= 0) & (local < self.num_local)
        x = self.weight[local.clamp(0, self.num_local - 1)] * mine.unsqueeze(-1).to(self.weight.dtype)  # [T, H]
        return self.group.all_reduce(x)


class ParallelLMHead(ColumnParallelLinear):
    """The LM head, vocab split over ranks; the logits are gathered whole on every rank."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.group.all_gather_last(super().forward(x))  # [T, vocab]
