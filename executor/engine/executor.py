"""Rank 0's step path: plan through the monitor, build the flat batch, broadcast it, run the
forward, sample where tokens are emitted, complete, and check the rules on what really ran.

Each scheduling step is one forward pass. A plan the monitor refuses never reaches the model.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from stallfree.spec import Config, Monitor, Reason
from stallfree.spec.ending import ENDED

from ..layers.attention import AttentionPlan
from ..layers.batch import FlatBatch
from ..layers.sampler import Sampler
from ..models.model import Transformer
from .allocator import CellAllocator
from .checks import (
    RealPathViolation,
    WriteLedger,
    check_budget,
    check_chunk,
    check_decode_first,
    check_emitted,
    check_entries,
    check_finite,
    check_first_token_row,
    check_kv,
)
from .stream import Stream, prompt_tokens


@dataclass(slots=True)
class StepRecord:
    step: int
    plan: list[tuple[int, int]]
    num_tokens: int
    ms: float  # the whole step, plan to checks
    forward_ms: float  # broadcast, forward, sampling
    monitor_ms: float  # monitor.plan() and monitor.complete(), the scheduler's calls included
    host_ms: float  # building the flat batch, the real-path checks and recording the step's outputs
    emitted: list[int]
    finished: list[int]
    free_kv: int
    tokens: dict[int, int] = field(default_factory=dict)  # rid -> the token it emitted this step
    preempted: list[int] = field(default_factory=list)  # rids whose KV the plan took back (paged design)


@dataclass(slots=True)
class Emitter:
    """A row whose logits yield a token this step."""

    stream: Stream
    row: int
    rows: range  # the entry's rows in the flat batch
    is_first: bool  # the chunk completes the prefill: its token is the first (or, recomputed, the next)


@dataclass(slots=True)
class Built:
    batch: FlatBatch
    rid_of_row: list[int]
    emitters: list[Emitter] = field(default_factory=list)


class Executor:
    """Drives `monitor` (and through it the scheduler) step by step on `model`.

    `send` hands each step's batch to the other ranks before the forward (a no-op for one rank);
    `prompts` gives the token ids of requests with real prompts (the others are drawn from the seed)."""

    plan_type: type[AttentionPlan] = AttentionPlan  # how attention is laid out (broken.py alters it)
    tokens_rule = "TOKENS"  # the design's rule for what a plan may ask of a request's tokens
    prefill_rule = "PREFILL-ONCE"  # its rule for which positions a chunk runs, and each once
    memory_rule = "KV"  # its rule for KV memory
    own_rules: tuple[str, ...] = ()  # the design's further rules this executor checks on the real path

    def __init__(self, model: Transformer, monitor: Monitor, sampler: Sampler, seed: int,
                 device: torch.device | str, send: Callable[[FlatBatch], None] = lambda b: None,
                 keep_logits: bool = False, prompts: dict[int, list[int]] | None = None,
                 stop_token: int | None = None, stop_after: dict[int, int] | None = None) -> None:
        self.model, self.monitor, self.sampler, self.seed = model, monitor, sampler, seed
        self.prompts = prompts or {}
        self.stop_token = stop_token  # a request that samples it stops (the model's end token)
        self.stop_after = stop_after or {}  # rid -> stop on its n-th token whatever it is (a replayed stop)
        self.cancelled_waiting: dict[int, int] = {}  # rid -> step: cancelled before it was ever admitted
        self.cancels: list[tuple[int, int, bool]] = []  # (rid, step, accepted) of every cancel offered
        self.config: Config = monitor.config
        self.device, self.send, self.keep_logits = device, send, keep_logits
        self.caches = model.new_caches(self.config.kv_tokens, device)
        self.allocator = CellAllocator(self.config.kv_tokens)
        self.ledger = WriteLedger(self.memory_rule, self.prefill_rule)
        self.requests: dict[int, tuple[int, int]] = {}  # accepted rid -> (prompt_len, max_new)
        self.streams: dict[int, Stream] = {}  # admitted, unfinished
        self.done: dict[int, Stream] = {}  # finished
        self.to_poison: list[int] = []  # cells freed since the last batch
        self.records: list[StepRecord] = []
        self.added_at: dict[int, float] = {}  # rid -> wall time of add()

    @property
    def step_index(self) -> int:
        return self.monitor.shadow.step

    def add(self, rid: Any, prompt_len: Any, max_new: Any) -> bool:
        accepted = self.monitor.add(rid, prompt_len, max_new)
        if accepted:
            self.requests[rid] = (prompt_len, max_new)
            self.added_at[rid] = time.perf_counter()
        return accepted

    # -- one step ---------------------------------------------------------------------------------

    def step(self) -> StepRecord:
        t0 = time.perf_counter()
        plan = self.monitor.plan()  # raises RuleViolation: a broken plan is refused before it runs
        t_plan = time.perf_counter()
        entries = [(rid, n) for rid, n in plan]
        step = self.step_index
        self.take_back(step, plan)
        check_entries(step, entries)
        check_decode_first(step, self.streams, {rid for rid, _ in entries})
        built = self.build(step, entries)
        check_budget(step, built.batch, self.config.token_budget)
        self.ledger.check(step, built.batch, built.rid_of_row)
        t_built = time.perf_counter()
        self.ledger.check_reads(step, built.batch, entries)
        sampled = self.run(step, built) if entries else {}
        t_run = time.perf_counter()
        stops = self.stops(sampled)
        facts = self.monitor.complete(stops) if stops else self.monitor.complete()
        t_done = time.perf_counter()
        firsts = {e.stream.rid for e in built.emitters if e.is_first}
        check_emitted(step, firsts, set(sampled), set(facts.emitted))
        finished = self.record(sampled, set(stops), t_done)
        self.check_memory(step)
        t_end = time.perf_counter()
        record = StepRecord(
            step, entries, built.batch.num_tokens, ms=(t_end - t0) * 1e3, forward_ms=(t_run - t_built) * 1e3,
            monitor_ms=((t_plan - t0) + (t_done - t_run)) * 1e3, host_ms=((t_built - t_plan) + (t_end - t_done)) * 1e3,
            emitted=list(facts.emitted), finished=finished, free_kv=self.free_memory, tokens=sampled,
            preempted=list(getattr(plan, "preempted", ())),
        )
        self.records.append(record)
        return record

    def run(self, step: int, built: Built) -> dict[int, int]:
        """Broadcast, forward, sample. Returns rid -> the token sampled for it."""
        batch = built.batch
        self.send(batch)
        dev = batch.to(self.device)
        if dev.poison_cells.numel():
            for cache in self.caches:
                cache.poison(dev.poison_cells)
        hidden, logits = self.model(dev, self.caches, self.plan_type)
        check_finite(step, hidden, built.rid_of_row, self.prefill_rule)
        sampled: dict[int, int] = {}
        positions = batch.positions.tolist()
        for i, e in enumerate(built.emitters):
            if e.is_first:
                check_first_token_row(step, e.stream, e.rows, e.row, positions[e.row])
            row_logits = logits[i]
            sampled[e.stream.rid] = self.draw(row_logits, e.stream)
            if self.keep_logits:
                e.stream.logits.append(row_logits.cpu())
        return sampled

    def stops(self, sampled: dict[int, int]) -> list[int]:
        """The rids whose token this step ends them: the end token, or a replayed stop. Only rids the
        contract says emit now may be named (a token the scheduler does not owe is judged by
        check_emitted, not passed on as a stop)."""
        ending = [rid for rid, token in sampled.items()
                  if token == self.stop_token or len(self.streams[rid].outputs) + 1 == self.stop_after.get(rid)]
        if not ending:
            return []
        due = set(self.monitor.due())
        return [rid for rid in ending if rid in due]

    def record(self, sampled: dict[int, int], stops: set[int], now: float) -> list[int]:
        """Give each stream its token; end the streams that stopped or have all theirs."""
        finished = []
        for rid, token in sampled.items():
            stream = self.streams[rid]
            stream.outputs.append(token)
            stream.emitted_at.append(self.step_index - 1)
            stream.times.append(now)
            if rid in stops or stream.is_finished:
                stream.finish_reason = "stop" if rid in stops else "length"
                self.finish(stream)
                finished.append(rid)
        return finished

    def cancel(self, rid: int) -> bool:
        """The client of `rid` went away: the scheduler is told (through the monitor); a running
        request's cells come back now (poisoned before the next forward), a waiting one is never
        admitted. Returns whether the cancel was accepted (a rid not waiting or running is refused)."""
        step = self.step_index
        accepted = self.monitor.cancel(rid)
        self.cancels.append((rid, step, accepted))
        if accepted and rid in self.streams:
            stream = self.streams[rid]
            stream.finish_reason = "cancel"
            self.finish(stream)
        elif accepted:
            self.cancelled_waiting[rid] = step
        return accepted

    # -- the flat batch ---------------------------------------------------------------------------

    def build(self, step: int, entries: list[tuple[int, int]]) -> Built:
        token_ids: list[int] = []
        positions: list[int] = []
        write_cells: list[int] = []
        ctx_lens: list[int] = []
        ctx_cells: list[int] = []
        rid_of_row: list[int] = []
        emitters: list[Emitter] = []
        for rid, n in entries:
            stream = self.streams.get(rid) or self.admit(step, rid)
            first_row = len(token_ids)
            rows = range(first_row, first_row + n)
            start = stream.next_position
            if stream.is_ready:
                if n != 1:
                    raise RealPathViolation(self.tokens_rule, step,
                                            f"rid {rid}'s prompt is done, yet n={n}; a decode is 1")
                token_ids.append(stream.outputs[-1])
                emitters.append(Emitter(stream, first_row, rows, is_first=False))
            else:
                check_chunk(step, stream, n, self.prefill_rule)
                token_ids.extend(self.prefill(stream, start, n))
                stream.num_prefilled += n
                if stream.num_prefilled == stream.target:
                    emitters.append(Emitter(stream, self.emit_row(rows), rows, is_first=True))
            self.grow(step, stream, start + n)
            positions.extend(range(start, start + n))
            write_cells.extend(self.write_cells(stream, start, n))
            context = self.context(stream, start + n)
            ctx_lens.append(len(context))
            ctx_cells.extend(context)
            rid_of_row.extend([rid] * n)
        poison, self.to_poison = self.to_poison, []

        def t(values: list[int]) -> torch.Tensor:
            return torch.tensor(values, dtype=torch.int64)

        batch = FlatBatch(
            t(token_ids), t(positions), t(write_cells), t([n for _, n in entries]), t(ctx_lens), t(ctx_cells),
            t([e.row for e in emitters]), t(poison),
        )
        return Built(batch, rid_of_row, emitters)

    # -- the steps a broken executor may alter (see broken.py) -------------------------------------

    def admit(self, step: int, rid: int) -> Stream:
        """A request's first appearance in a plan is its admission: reserve prompt_len + max_new cells.
        A plan naming a cancelled request breaks CANCEL; one naming an ended or unknown request, or a
        prompt of the wrong length, breaks TOKENS (`tokens_rule`: TOKENS-KEPT in the paged design)."""
        if rid in self.cancelled_waiting or (rid in self.done and self.done[rid].finish_reason == "cancel"):
            at = self.cancelled_waiting.get(rid, step)
            raise RealPathViolation("CANCEL", step, f"the plan names rid {rid}, which was cancelled"
                                    + (f" at step {at}" if rid in self.cancelled_waiting else ""))
        if rid not in self.requests or rid in self.done:
            why = f"has ended ({self.done[rid].finish_reason})" if rid in self.done else "was never accepted"
            raise RealPathViolation(self.tokens_rule, step, f"the plan names rid {rid}, which {why}")
        prompt_len, max_new = self.requests[rid]
        cells = self.reserve(step, rid, prompt_len + max_new)
        self.ledger.reserve(rid, cells)
        prompt = self.prompts.get(rid) or prompt_tokens(self.seed, rid, prompt_len, self.model.cfg.vocab)
        if len(prompt) != prompt_len:
            raise RealPathViolation(self.tokens_rule, step,
                                    f"rid {rid}'s prompt has {len(prompt)} tokens, not {prompt_len}")
        stream = Stream(rid, list(prompt), max_new, cells, step)
        self.streams[rid] = stream
        return stream

    def reserve(self, step: int, rid: int, num_cells: int) -> list[int]:
        """The cells a request holds from its admission: all prompt_len + max_new of them (rule KV)."""
        try:
            return self.allocator.reserve(num_cells)
        except ValueError as error:
            raise RealPathViolation("KV", step, f"admitting rid {rid}: {error}") from None

    def grow(self, step: int, stream: Stream, num_positions: int) -> None:
        """Make room for positions 0 .. num_positions - 1 (a reservation holds them from admission)."""

    def prefill(self, stream: Stream, start: int, n: int) -> list[int]:
        """The tokens of a chunk: prefill positions [start, start + n)."""
        return stream.prefill(start, n)

    def take_back(self, step: int, plan: object) -> None:
        """Memory the plan takes back before it runs (the reservation design takes back none)."""

    @property
    def free_memory(self) -> int:
        """Free KV, as the step table shows it: cells here, blocks in the paged design."""
        return self.allocator.num_free

    def check_memory(self, step: int) -> None:
        """KV after a step: the allocator, the contract and the scheduler agree on what is free."""
        free_kv = getattr(self.monitor.scheduler, "free_kv", None)
        check_kv(step, self.allocator.num_free, self.monitor.shadow.free_kv, free_kv if type(free_kv) is int else None)

    def draw(self, logits: torch.Tensor, stream: Stream) -> int:
        """The stream's next token from its row's logits [vocab]: seeded by its rid and token index."""
        return self.sampler.sample(logits, stream.rid, len(stream.outputs))

    def write_cells(self, stream: Stream, start: int, n: int) -> list[int]:
        """The KV cells the keys and values of positions [start, start + n) go to."""
        return stream.cells[start:start + n]

    def context(self, stream: Stream, end: int) -> list[int]:
        """The KV cells a query at position end - 1 may read: positions 0 .. end - 1."""
        return stream.cells[:end]

    def emit_row(self, rows: range) -> int:
        """The row of a completing chunk whose logits give the first token: its last prompt position."""
        return rows[-1]

    def finish(self, stream: Stream) -> None:
        """Return the stream's reservation; its cells are poisoned before the next forward."""
        del self.streams[stream.rid]
        self.done[stream.rid] = stream
        self.allocator.release(stream.cells)
        self.ledger.release(stream.rid, *self.ending(stream))
        self.to_poison.extend(stream.cells)

    def ending(self, stream: Stream) -> tuple[str, int]:
        """How an ended stream ended, as the ledger keeps it: the finish reason as a verb (the
        contract's wording, TOKENS and CANCEL) and the step of its last token (of the cancel)."""
        reason = Reason(stream.finish_reason or "length")
        at = stream.emitted_at[-1] if reason is not Reason.CANCEL and stream.emitted_at else self.step_index
        return ENDED[reason], at

    def check_drained(self) -> None:
        """KV at the end: every cell free, nothing running."""
        step = self.step_index
        if self.streams:
            raise RealPathViolation("KV", step, f"the run ended with rid(s) {sorted(self.streams)[:5]} holding KV")
        check_kv(step, self.allocator.num_free, self.config.kv_tokens, None)
