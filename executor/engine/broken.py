"""Deliberately broken executors: the negative controls of the real-path checks. Each alters one
step of `Executor` and names what it breaks in `breaks`; the scheduler driving it is correct, so
only the real path can catch it.

`BROKEN`: one per real-path rule (`checks.py`), caught during the run. `WRONG_OUTPUTS`: bugs the
step checks cannot see (every cell they read is written, every row finite), caught only by judging
the model's outputs after the run (`outputs.py`): exactness, isolation, seeded sampling.
"""

from __future__ import annotations

from typing import Any

import torch

from ..layers import fp8
from ..layers.attention import AttentionPlan
from ..layers.batch import FlatBatch
from .executor import Executor, StepRecord
from .paged import PagedExecutor
from .prefix import PrefixExecutor
from .stream import Stream


class LeakOnFinish(Executor):
    """Never returns a finished request's KV cells to the allocator."""

    breaks = "KV"

    def finish(self, stream: Stream) -> None:
        del self.streams[stream.rid]
        self.done[stream.rid] = stream
        self.ledger.release(stream.rid)


class RewriteLastPosition(Executor):
    """Each later chunk writes its keys and values one cell early, over the previous chunk's last."""

    breaks = "PREFILL-ONCE"

    def write_cells(self, stream: Stream, start: int, n: int) -> list[int]:
        shift = 1 if 0 < start < stream.prompt_len else 0
        return stream.cells[start - shift:start + n - shift]


class ReadPastWritten(Executor):
    """Lets each query see one cell past its own position: memory not yet written (NaN)."""

    breaks = "PREFILL-ONCE"

    def context(self, stream: Stream, end: int) -> list[int]:
        return stream.cells[:end + 1]


class FirstTokenFromFirstRow(Executor):
    """Takes a prompt's first token from the first row of the completing chunk, not its last."""

    breaks = "FIRST-TOKEN"

    def emit_row(self, rows: range) -> int:
        return rows[0]


BROKEN: dict[str, type[Executor]] = {
    cls.__name__: cls for cls in (LeakOnFinish, RewriteLastPosition, ReadPastWritten, FirstTokenFromFirstRow)
}


class ReturnLate(Executor):
    """Returns an ended request's KV cells (finished, stopped or cancelled) one step late."""

    breaks = "KV"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owed: list[int] = []

    def finish(self, stream: Stream) -> None:
        del self.streams[stream.rid]
        self.done[stream.rid] = stream
        self.ledger.release(stream.rid, "ended", self.step_index)
        self.owed.extend(stream.cells)
        self.to_poison.extend(stream.cells)

    def step(self) -> StepRecord:
        owed, self.owed = self.owed, []
        self.allocator.release(owed)  # the cells of the step before come back only now
        return super().step()


class ReadFreedCell(Executor):
    """Each decode's context also names a cell an ended request returned (and nobody holds again):
    the stale KV of a finished, stopped or cancelled request."""

    breaks = "KV"

    def context(self, stream: Stream, end: int) -> list[int]:
        freed = self.ledger.freed  # cell -> (rid, how it ended, step): read the latest returned
        stale = max(freed, key=lambda cell: (freed[cell][2], -cell), default=None)
        is_decode = end - 1 >= stream.prompt_len
        return stream.cells[:end] + ([stale] if stale is not None and is_decode else [])


class ReadFreedBlock(PagedExecutor):
    """The paged executor whose decodes also read a cell of the latest block given back (by a
    request that ended or was preempted) that no request holds again."""

    breaks = "BLOCKS"
    context = ReadFreedCell.context


class RecomputeDropsOne(PagedExecutor):
    """Recompute after a preemption prefills the prompt and the emitted tokens less the first, the
    last one repeated to keep the length: every step check holds, the recomputed KV is wrong."""

    breaks = "RECOMPUTE"

    def prefill(self, stream: Stream, start: int, n: int) -> list[int]:
        if not stream.num_preemptions or len(stream.outputs) < 2:
            return super().prefill(stream, start, n)
        return (stream.prompt + stream.outputs[1:] + stream.outputs[-1:])[start:start + n]


class JustFreedPlan(AttentionPlan):
    """Each decode also attends to the first cell the batch poisons (returned on the step before):
    a read the batch's contexts do not declare, so only the poison can show it."""

    def __init__(self, batch: FlatBatch, pad_cell: int) -> None:
        super().__init__(batch, pad_cell)
        if batch.poison_cells.numel() and self.decode_rows.numel():
            stale = batch.poison_cells[:1].expand(self.decode_cells.shape[0], 1)
            self.decode_cells = torch.cat((self.decode_cells, stale), dim=1)
            self.decode_mask = torch.cat((self.decode_mask, torch.ones_like(stale, dtype=torch.bool)), dim=1)


class ReadsJustFreed(Executor):
    """Attention reads a cell returned on the step before, behind the batch's back (see JustFreedPlan)."""

    breaks = "PREFILL-ONCE"  # check_finite: a row read freed memory (NaN)
    plan_type = JustFreedPlan


# Caught on the real path in runs where requests end early (stops, cancels): tests/test_executor_ends.py;
# and, under a paged scheduler, where blocks are given back: tests/test_executor_paged.py.
BROKEN_ENDS: dict[str, type[Executor]] = {cls.__name__: cls for cls in (ReturnLate, ReadFreedCell, ReadsJustFreed)}
BROKEN_BLOCKS: dict[str, type[Executor]] = {cls.__name__: cls for cls in (ReadFreedBlock,)}


class FutureTokenPlan(AttentionPlan):
    """A causal mask off by one: each query of a chunk also sees the next position of the chunk
    (written this step, so finite: the poison does not catch it)."""

    def causal(self, n: int, L: int, device: torch.device) -> torch.Tensor:
        query_pos = torch.arange(L - n, L, device=device)[:, None]
        return torch.arange(L, device=device)[None, :] <= query_pos + 1


class SeeOneFutureToken(Executor):
    """Chunks attend one position into their future (every chunk not from position 0: a chunk
    from position 0 runs the unmasked causal kernel)."""

    breaks = "EXACTNESS"
    plan_type = FutureTokenPlan


class ReadOtherRequest(Executor):
    """A decode's context also holds another running request's last prefilled KV cell (written, so
    finite): its outputs depend on what it is batched with."""

    breaks = "ISOLATION"

    def context(self, stream: Stream, end: int) -> list[int]:
        others = [s for rid, s in sorted(self.streams.items()) if rid != stream.rid and s.num_prefilled > 0]
        is_decode = end - 1 >= stream.prompt_len
        leak = [others[0].cells[others[0].num_prefilled - 1]] if others and is_decode else []
        return leak + stream.cells[:end]


class DrawsByStep(Executor):
    """Seeds each draw with the step number instead of the token index: a request's sample then
    depends on when it ran, and the unbatched replay draws other tokens."""

    breaks = "EXACTNESS"

    def draw(self, logits: torch.Tensor, stream: Stream) -> int:
        return self.sampler.sample(logits, stream.rid, self.step_index)


class KeyMissesLastToken(PrefixExecutor):
    """The prefix executor whose block keys leave out each block's last token (declared as token 0):
    two prompts that differ only there share keys, so a hit serves KV computed for other tokens. The
    scheduler, the monitor and the executor's accounting all agree; only the outputs show it."""

    breaks = "HIT-SAME-TOKENS"

    def content(self, rid: int, prompt_len: int) -> tuple[tuple[int, int], ...]:
        bs = self.block_size
        return tuple((0, 1) if i % bs == bs - 1 else s for i, s in enumerate(super().content(rid, prompt_len)))


WRONG_OUTPUTS: dict[str, type[Executor]] = {
    cls.__name__: cls for cls in (SeeOneFutureToken, ReadOtherRequest, DrawsByStep, RecomputeDropsOne,
                                     KeyMissesLastToken)
}
VARIANTS: dict[str, type[Executor]] = {**BROKEN, **BROKEN_ENDS, **BROKEN_BLOCKS, **WRONG_OUTPUTS}


def per_batch_scale(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor | None,
                    unpacked: torch.Tensor | None = None, x_scale: torch.Tensor | None = None) -> torch.Tensor:
    """A broken `fp8.linear`, to monkeypatch into `parallel.linear` (breaks ISOLATION): every token
    of the step quantized with the step's largest activation, one scale shared across requests."""
    if weight.dtype == fp8.FP8 and x.shape[0]:
        shared = fp8.row_scale(x.abs().amax().reshape(1, 1)) if x_scale is None else x_scale.max().reshape(1, 1)
        x_scale = shared.expand(x.shape[0], 1)
    return fp8.linear(x, weight, scale, unpacked, x_scale)
