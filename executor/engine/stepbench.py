"""Steps of known shape for the step-time benchmarks: decode-only, prefill and mixed flat batches
built directly (no scheduler: the shape is the variable), the roofline load of each (for the cost
model's floor), and wall-clock timers by kind of work (collectives, attention, linear layers).

The timers wrap the three places the work happens (`Group`'s collectives, `paged_attention`,
`fp8.linear` as the parallel layers call it) for the life of a `timed()` block, in this process
only. They time host wall clock: on a GPU that needs a synchronize per call, so the GPU benchmark
times whole steps instead.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from stallfree.costs import StepLoad

from ..layers import parallel as parallel_module
from ..layers.batch import FlatBatch
from ..layers.group import Group
from ..models import model as model_module

KINDS = ("collectives", "attention", "linear")  # the rest of a step: norms, rotary, embedding, KV writes


@dataclass(frozen=True, slots=True)
class StepShape:
    """`num_decodes` decodes at context `decode_context`, then one prefill chunk of `chunk` tokens
    starting at prompt position `chunk_start` (0 tokens: none)."""

    name: str
    num_decodes: int
    decode_context: int
    chunk: int = 0
    chunk_start: int = 0

    @property
    def num_tokens(self) -> int:
        return self.num_decodes + self.chunk

    @property
    def kv_tokens(self) -> int:
        """Cells the batch touches: each decode's context, the chunk's prefix and itself."""
        return self.num_decodes * self.decode_context + self.chunk_start + self.chunk

    def load(self) -> StepLoad:
        pairs = self.num_decodes * self.decode_context + StepLoad.chunk_pairs(self.chunk_start, self.chunk)
        return StepLoad(self.num_tokens, pairs, self.num_decodes * (self.decode_context - 1) + self.chunk_start)

    def batch(self, vocab: int) -> FlatBatch:
        """The flat batch: decodes first (each at the last position of its context), then the chunk;
        cells laid out one sequence after another."""
        ids: list[int] = []
        positions: list[int] = []
        writes: list[int] = []
        lens: list[int] = []
        ctx_lens: list[int] = []
        ctx_cells: list[int] = []
        emit: list[int] = []
        cell = 0
        for _ in range(self.num_decodes):
            L = self.decode_context
            emit.append(len(ids))
            ids.append(len(ids) % vocab)
            positions.append(L - 1)
            writes.append(cell + L - 1)
            lens.append(1)
            ctx_lens.append(L)
            ctx_cells.extend(range(cell, cell + L))
            cell += L
        if self.chunk:
            end = self.chunk_start + self.chunk
            ids.extend(i % vocab for i in range(self.chunk))
            positions.extend(range(self.chunk_start, end))
            writes.extend(range(cell + self.chunk_start, cell + end))
            lens.append(self.chunk)
            ctx_lens.append(end)
            ctx_cells.extend(range(cell, cell + end))
            emit.append(len(ids) - 1)

        def t(values: list[int]) -> torch.Tensor:
            return torch.tensor(values, dtype=torch.int64)

        return FlatBatch(t(ids), t(positions), t(writes), t(lens), t(ctx_lens), t(ctx_cells), t(emit), t([]))


def shapes(budget: int, context: int) -> list[StepShape]:
    """Decode-only (`budget` decodes), prefill (one chunk of `budget` from position 0) and mixed (a
    quarter of the budget in decodes, the rest one chunk after a prefix of `context`)."""
    quarter = max(1, budget // 4)
    return [
        StepShape("decode", budget, context),
        StepShape("prefill", 0, 0, budget, 0),
        StepShape("mixed", quarter, context, budget - quarter, context),
    ]


@contextmanager
def timed(totals: dict[str, float]) -> Iterator[None]:
    """Add the seconds spent in each kind of work (KINDS) to `totals` while the block runs."""
    patches: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, kind: str) -> None:
        inner: Callable[..., Any] = getattr(owner, name)

        def timed_call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                totals[kind] += time.perf_counter() - start

        patches.append((owner, name, inner))
        setattr(owner, name, timed_call)

    for name in ("all_reduce", "all_reduce_max", "all_gather_last"):
        wrap(Group, name, "collectives")
    wrap(model_module, "paged_attention", "attention")
    wrap(parallel_module, "linear", "linear")
    try:
        yield
    finally:
        for owner, name, inner in reversed(patches):
            setattr(owner, name, inner)


def time_steps(model: Any, shape: StepShape, reps: int, vocab: int, device: torch.device | str = "cpu",
               by_kind: bool = True, sync: Callable[[], None] = lambda: None) -> tuple[list[float], dict[str, float]]:
    """Run `shape` once to warm up, then `reps` times. Returns each step's seconds and, when
    `by_kind`, the mean seconds per step in each kind of work."""
    batch = shape.batch(vocab).to(device)
    caches = model.new_caches(shape.kv_tokens, device)
    for cache in caches:  # written memory: the poison (NaN) is for the executor's checks, not timing
        cache.k.zero_()
        cache.v.zero_()
    model(batch, caches)
    sync()
    steps: list[float] = []
    totals: dict[str, float] = defaultdict(float)
    for _ in range(reps):
        start = time.perf_counter()
        if by_kind:
            with timed(totals):
                model(batch, caches)
        else:
            model(batch, caches)
        sync()
        steps.append(time.perf_counter() - start)
    return steps, {k: totals[k] / reps for k in KINDS}
