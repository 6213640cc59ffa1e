"""Rule checks on the real step path: judged on the tensors that go into the forward pass and the
allocator that hands out KV memory, not on the scheduler's word. Each raises RuleViolation with the
rule ID. They complement the monitor, which judges the same rules from the plain protocol alone."""

from __future__ import annotations

import torch

from stallfree.spec import RuleViolation

from ..layers.batch import FlatBatch
from .stream import Stream

REAL_PATH_RULES = ("BUDGET", "ONE-ENTRY", "PREFILL-ONCE", "FIRST-TOKEN", "KV", "DECODE-FIRST")
# Judged on the real path too in runs where requests stop or are cancelled: no plan names a request
# that ended (TOKENS: finished or stopped; CANCEL: cancelled), so nothing is computed for it after.
REAL_PATH_END_RULES = ("TOKENS", "CANCEL")


class RealPathViolation(RuleViolation):
    """A rule broken on the real step path (the batch, the KV memory, the sampled rows), as opposed
    to one the monitor saw in the plain protocol."""


def check_budget(step: int, batch: FlatBatch, token_budget: int) -> None:
    """BUDGET: the flat batch, the tensor the forward pass runs, holds at most B tokens."""
    if batch.num_tokens > token_budget:
        raise RealPathViolation(
            "BUDGET", step, f"the step's batch holds {batch.num_tokens} tokens; the budget is {token_budget}"
        )


def check_entries(step: int, entries: list[tuple[int, int]]) -> None:
    """ONE-ENTRY: each request appears at most once in the batch, with n >= 1 tokens."""
    seen: set[int] = set()
    for rid, n in entries:
        if type(n) is not int or n < 1:
            raise RealPathViolation("ONE-ENTRY", step, f"rid {rid!r} is given n={n!r}; every entry needs n >= 1")
        if rid in seen:
            raise RealPathViolation("ONE-ENTRY", step, f"rid {rid!r} appears twice in the step's batch")
        seen.add(rid)


def check_decode_first(step: int, streams: dict[int, Stream], planned: set[int]) -> None:
    """DECODE-FIRST: every ready request (prompt done, tokens owed) is in the step's batch."""
    left_out = [rid for rid, s in streams.items() if s.is_ready and rid not in planned]
    if left_out:
        raise RealPathViolation("DECODE-FIRST", step, f"ready request(s) {left_out[:5]} are not in the step's batch")


def check_chunk(step: int, stream: Stream, n: int, rule: str = "PREFILL-ONCE") -> None:
    """PREFILL-ONCE (RECOMPUTE in the paged design: `rule`): a chunk covers the next n prefill
    positions and never runs past them."""
    remaining = stream.target - stream.num_prefilled
    if n > remaining:
        raise RealPathViolation(
            rule, step, f"rid {stream.rid} is given a chunk of {n} at position {stream.num_prefilled}; "
            f"only {remaining} of its {stream.target} prefill positions remain",
        )


def check_finite(step: int, hidden: torch.Tensor, rid_of_row: list[int], rule: str = "PREFILL-ONCE") -> None:
    """PREFILL-ONCE (reads; RECOMPUTE in the paged design: `rule`): free KV cells hold NaN, so a step
    whose attention read a cell never written, or already freed, has non-finite hidden states in the
    rows that read it."""
    bad = (~torch.isfinite(hidden)).any(dim=-1)
    if bool(bad.any()):
        rids = sorted({rid_of_row[i] for i in bad.nonzero().flatten().tolist()})
        raise RealPathViolation(
            rule, step, f"rid(s) {rids[:5]} read KV memory that was never written or already "
            "freed (NaN in their hidden states)",
        )


def check_first_token_row(step: int, stream: Stream, rows: range, row: int, position: int) -> None:
    """FIRST-TOKEN: the first token is sampled from the logits of the last prompt position, in the
    chunk that completes the prompt."""
    if row not in rows or position != stream.target - 1:
        raise RealPathViolation(
            "FIRST-TOKEN", step, f"rid {stream.rid}'s token after its prefill is sampled from row {row} (position "
            f"{position}); it must come from its last prefill position {stream.target - 1} "
            f"(rows {rows.start}-{rows.stop - 1})",
        )


def check_emitted(step: int, firsts: set[int], sampled: set[int], emitted: set[int]) -> None:
    """FIRST-TOKEN: the scheduler reports a first token in exactly the step whose chunk computed it."""
    late = sorted(firsts - emitted)
    if late:
        raise RealPathViolation(
            "FIRST-TOKEN", step, f"the step computed the first token of rid(s) {late[:5]} from their last prompt "
            "position, but the scheduler emitted none",
        )
    unearned = sorted(emitted - sampled)
    if unearned:
        raise RealPathViolation(
            "FIRST-TOKEN", step,
            f"the scheduler emitted a token for rid(s) {unearned[:5]}, which the step did not compute",
        )


def check_kv(step: int, allocator_free: int, shadow_free: int, scheduler_free: int | None) -> None:
    """KV: the allocator's free cells equal the free KV the contract derives (K minus the reservations
    of running requests) and, where the scheduler shows one, the scheduler's free KV."""
    if allocator_free != shadow_free:
        raise RealPathViolation(
            "KV", step,
            f"the allocator has {allocator_free} free KV cells; the running requests' reservations leave {shadow_free}",
        )
    if scheduler_free is not None and scheduler_free != allocator_free:
        raise RealPathViolation(
            "KV", step, f"the scheduler shows free_kv={scheduler_free}; the allocator has {allocator_free} free"
        )


class WriteLedger:
    """PREFILL-ONCE and KV (writes; RECOMPUTE and BLOCKS in the paged design: `prefill_rule`,
    `memory_rule`): each KV cell of a request is written once, in position order, into the cell
    reserved for that position; freed cells must be reserved again before a write."""

    def __init__(self, memory_rule: str = "KV", prefill_rule: str = "PREFILL-ONCE") -> None:
        self.reserved: dict[int, list[int]] = {}  # rid -> its cells, by position
        self.num_written: dict[int, int] = {}  # rid -> positions written so far
        self.written: set[int] = set()  # cells written since their reservation
        self.freed: dict[int, tuple[int, str, int]] = {}  # free cell -> (rid, how it ended, step) of its last holder
        self.rule = memory_rule  # what a read of free memory, or a write outside a reservation, breaks
        self.prefill_rule = prefill_rule  # what a position written twice, or out of order, breaks

    def reserve(self, rid: int, cells: list[int]) -> None:
        self.reserved[rid] = list(cells)
        self.num_written[rid] = 0
        for cell in cells:
            self.freed.pop(cell, None)

    def extend(self, rid: int, cells: list[int]) -> None:
        """`rid` takes `cells` for its next positions (a paged request's new block)."""
        if cells:
            self.reserved[rid].extend(cells)
            for cell in cells:
                self.freed.pop(cell, None)

    def release(self, rid: int, why: str = "finished", step: int = -1) -> None:
        cells = self.reserved.pop(rid, [])
        self.written.difference_update(cells)
        self.num_written.pop(rid, None)
        for cell in cells:
            self.freed[cell] = (rid, why, step)

    def check_reads(self, step: int, batch: FlatBatch, entries: list[tuple[int, int]]) -> None:
        """KV (reads): no entry's context names a free cell, one whose holder finished, stopped, was
        cancelled or preempted and that no request holds again. (A read the batch does not declare
        still meets the poison: free cells hold NaN, see check_finite.)"""
        if not self.freed:
            return
        ctx = batch.ctx_cells.tolist()
        stale = self.freed.keys() & set(ctx)
        if not stale:
            return
        offsets = batch.ctx_lens.tolist()
        start = 0
        for (rid, _), length in zip(entries, offsets, strict=True):
            for cell in ctx[start:start + length]:
                if cell in stale:
                    holder, why, at = self.freed[cell]
                    raise RealPathViolation(
                        self.rule, step, f"rid {rid} reads KV cell {cell}, which is free: returned when rid {holder} "
                        f"{why} at step {at}",
                    )
            start += length

    def check(self, step: int, batch: FlatBatch, rid_of_row: list[int]) -> None:
        positions = batch.positions.tolist()
        cells = batch.write_cells.tolist()
        for rid, position, cell in zip(rid_of_row, positions, cells, strict=True):
            expected = self.num_written.get(rid)
            if expected is None:
                raise RealPathViolation(self.rule, step, f"rid {rid} writes KV cell {cell} without a reservation")
            if position >= len(self.reserved[rid]):
                raise RealPathViolation(
                    self.rule, step, f"rid {rid} writes position {position}, past its {len(self.reserved[rid])} cells"
                )
            if cell in self.written:
                raise RealPathViolation(
                    self.prefill_rule, step, f"rid {rid} writes KV cell {cell} (position {position}) a second time"
                )
            if position != expected or self.reserved[rid][position] != cell:
                raise RealPathViolation(
                    self.prefill_rule, step, f"rid {rid} writes position {position} into cell {cell}; next in order "
                    f"is position {expected} into its cell {self.reserved[rid][expected]}",
                )
            self.written.add(cell)
            self.num_written[rid] = expected + 1
