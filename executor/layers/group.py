"""The tensor-parallel group: this rank, the world size, and the collectives the model and the step
path use. World size 1 needs no process group and communicates nothing.

Each collective first stamps this rank's progress (progress.py): how many collectives it has
entered, and when; the launcher reads the stamps to find a rank that fell behind its peers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from .progress import Progress

COLLECTIVE_TIMEOUT_S = 60.0  # a collective waiting longer than this raises instead of hanging


@dataclass(frozen=True, slots=True)
class Group:
    rank: int = 0
    world_size: int = 1
    handle: Any = None  # the torch.distributed process group; None for world size 1
    progress: Progress | None = None  # where this rank stamps its progress (None: nobody watches)

    @property
    def is_leader(self) -> bool:
        """Rank 0 owns the scheduler and broadcasts each step's batch."""
        return self.rank == 0

    def entering(self) -> None:
        """Stamp this rank's entry into one more collective."""
        if self.progress is not None:
            self.progress.enter_collective(self.rank)

    def stamp_step(self, step: int) -> None:
        """Stamp this rank's entry into step `step` (the job's batch number)."""
        if self.progress is not None:
            self.progress.enter_step(self.rank, step)

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        """Sum `x` over ranks, in place."""
        if self.world_size > 1:
            self.entering()
            dist.all_reduce(x, group=self.handle)
        return x

    def all_reduce_max(self, x: torch.Tensor) -> torch.Tensor:
        """Elementwise maximum of `x` over ranks, in place."""
        if self.world_size > 1:
            self.entering()
            dist.all_reduce(x, op=dist.ReduceOp.MAX, group=self.handle)
        return x

    def all_gather_last(self, x: torch.Tensor) -> torch.Tensor:
        """[..., n] on each rank -> [..., n * world_size], rank order along the last dim."""
        if self.world_size == 1:
            return x
        self.entering()
        parts = [torch.empty_like(x) for _ in range(self.world_size)]
        dist.all_gather(parts, x.contiguous(), group=self.handle)
        return torch.cat(parts, dim=-1)

    def broadcast(self, x: torch.Tensor) -> torch.Tensor:
        """Rank 0's `x` on every rank (same shape and dtype everywhere), in place."""
        if self.world_size > 1:
            self.entering()
            dist.broadcast(x, src=0, group=self.handle)
        return x


def join(rank: int, world_size: int, port: int, backend: str, timeout_s: float = COLLECTIVE_TIMEOUT_S,
         progress: Progress | None = None) -> Group:
    """Join the group of `world_size` ranks rendezvousing on 127.0.0.1:`port`."""
    if world_size == 1:
        return Group()
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size,
        timeout=timedelta(seconds=timeout_s),
    )
    return Group(rank, world_size, dist.group.WORLD, progress)


def leave(group: Group) -> None:
    if group.world_size > 1 and dist.is_initialized():
        dist.destroy_process_group()
