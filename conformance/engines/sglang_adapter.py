"""SGLang's scheduling policy (`PrefillAdder` and `SchedulePolicy` over its radix cache and its CPU KV
pool, sglang 0.5.23) behind the plain protocol, in process, for
`stallfree conform stallfree.conformance.engines.sglang_adapter:SglangScheduler`.

What is SGLang's and what is the adapter's:

- SGLang's: every admission and every chunk. Each step builds SGLang's `PrefillAdder` and asks it, as
  SGLang's scheduler does, for the pending chunked request first (`add_chunked_req`) and then each
  waiting request in the FCFS order `SchedulePolicy.calc_priority` gives (`init_next_round_input`
  over the radix cache, `add_one_req`, stopping at the first result other than CONTINUE). The batch
  is SGLang's (`ScheduleBatch.init_new`, `prepare_for_extend`, `prepare_for_decode`, `filter_batch`,
  `merge_batch`), its KV taken from SGLang's allocator; a finished request's KV goes back through
  SGLang's `release_kv_cache`, a chunk's through `checkpoint_kv_cache`.
- The adapter's: the step loop around them. SGLang's scheduler (`Scheduler.get_next_batch_to_run`)
  cannot be built without a model, a tokenizer and its sockets, so the adapter follows its plain path
  (no LoRA, HiCache, Mamba, SWA, DLLM, overlap, speculation, priority preemption): a prefill batch
  when the adder admits anything, otherwise one decode step of the running batch. The forward pass
  is faked (one token for each request due one). add() is the adapter's too: SGLang's scheduler
  checks no request, its front end does (NEVER-FIT would judge the adapter).
- SGLang's design has no mixed step (mixed chunked prefill is an option, off by default): a prefill
  batch runs alone, so the running requests' decodes wait that step; and its token budget
  (`max_prefill_tokens`, `chunked_prefill_size`, both set to B here) binds prefill batches only, a
  decode batch being as large as the running batch.
- Memory: the adder charges a new request its prompt plus its whole max_new, and each running one its
  remaining max_new times `new_token_ratio`. `SglangScheduler` fixes the ratio at 1.0 (SGLang's most
  conservative setting): a full reservation, as the contract's design takes. `SglangDefaultRatio`
  keeps SGLang's default initial ratio, 0.7 (held fixed: SGLang decays it step by step): it admits on
  an estimate and, when decode runs out of KV, SGLang retracts a request, which the plain protocol
  cannot say: the adapter raises `Retracted` (a CRASH the kit reports with the smallest workload);
  `sglang_paged` runs SGLang's retraction behind the paged protocol instead.
- `free_kv` is SGLang's own account between steps, as the next step's adder opens it (free plus
  evictable tokens, less each running request's remaining max_new times the ratio), so rule KV judges
  it after every step; at 0.7 it is no whole number of tokens and `SglangDefaultRatio` shows none.
- Radix prefix caching is on, as SGLang runs it, but the made-up prompts share no token, so no request
  hits the cache: the plain protocol has no word for a cached prefix.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, ClassVar

from .front_end import check_request
from .sglang_setup import SAMPLED_TOKEN, make_pools, make_req, model_config, sglang

NEVER_FIT_IS_THE_ADAPTERS = (
    "add() is the adapter's own check of the contract's refusals: SGLang's scheduler checks no request, its "
    "front end does, so NEVER-FIT would judge the adapter, not SGLang")


NOTHING = object()  # the pending "batch" of an empty plan


class Retracted(RuntimeError):
    """SGLang's decode ran out of KV and would retract a request: the plain protocol cannot say so."""


class SglangScheduler:
    """SGLang's policy with new_token_ratio 1.0 (see the module's docstring)."""

    new_token_ratio: ClassVar[float] = 1.0
    radix_cache: ClassVar[bool] = True  # SGLang's radix prefix cache, on as SGLang runs it
    stallfree_not_applicable: ClassVar[dict[str, str]] = {"NEVER-FIT": NEVER_FIT_IS_THE_ADAPTERS}

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self.s = sglang()
        self.budget, self.max_seqs, self.kv_tokens = token_budget, max_seqs, kv_tokens
        self.rows, self.allocator, self.tree = make_pools(max_seqs, kv_tokens, kv_tokens + 1, self.tree_class(),
                                                          self.radix_cache)
        self.policy = self.s.SchedulePolicy("fcfs", self.tree, False, False, False)
        self.waiting_queue: list[Any] = []
        self.running_batch = self.s.ScheduleBatch(reqs=[], batch_is_full=False)
        self.chunked: Any = None
        self.last_extend: Any = None
        self.pending: Any = None
        self._taken: set[int] = set()

    def adder_class(self) -> type:
        """The adder class: SGLang's PrefillAdder (a planted fault subclasses it)."""
        return self.s.PrefillAdder

    @property
    def waiting(self) -> list[SimpleNamespace]:
        """SGLang's waiting queue, as the requests' rids."""
        return [SimpleNamespace(rid=int(r.rid)) for r in self.waiting_queue]

    def tree_class(self) -> type:
        """The radix cache class: SGLang's RadixCache (a planted fault subclasses it)."""
        return self.s.RadixCache

    def ratio(self) -> float:
        """The new_token_ratio this step's adder is built with: the class's, held fixed here."""
        return self.new_token_ratio

    def adder(self, running: Any = None) -> Any:
        """SGLang's PrefillAdder for this step (over `running`, by default the running batch): budget B
        for the prefill batch and for each chunk."""
        return self.adder_class()(1, self.tree, self.allocator, self.running_batch if running is None else running,
                                   self.ratio(), self.budget, self.budget, 0,
                                   max_running_requests=self.max_seqs)

    @property
    def free_kv(self) -> int | None:
        """SGLang's own account of its free KV, as the next step's PrefillAdder opens it before admitting
        anyone: the allocator's free tokens plus the radix cache's evictable ones, less what it holds back
        for each request that will be running (its remaining max_new times the ratio). None with a plan
        pending, or when that account is not a whole number of tokens (a ratio below 1.0)."""
        if self.pending is not None:
            return None
        running = list(self.running_batch.reqs)
        if self.last_extend is not None:
            running += [r for r in self.last_extend.reqs if r is not self.chunked and not r.finished()]
        account = self.adder(self.s.ScheduleBatch(reqs=running, batch_is_full=False)).rem_total_tokens
        return int(account) if float(account).is_integer() else None

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        check_request(rid, prompt_len, max_new, self._taken)
        if prompt_len + max_new > self.kv_tokens:
            raise ValueError(f"prompt_len + max_new = {prompt_len + max_new} exceeds the context length "
                             f"{self.kv_tokens}")
        self.waiting_queue.append(self.request(rid, prompt_len, max_new))
        self._taken.add(rid)

    def request(self, rid: int, prompt_len: int, max_new: int) -> Any:
        """SGLang's Req for an accepted request (the adapter with stops builds a subclass's)."""
        return make_req(rid, prompt_len, max_new)

    def schedule(self) -> list[tuple[int, int]]:
        if self.pending is not None:
            raise RuntimeError("schedule() with a plan pending: complete() it first")
        self._merge_last_extend()
        batch = self._prefill()
        if batch is not None:
            self.pending, self.last_extend = batch, batch
            return self.plan([(int(r.rid), r.extend_len) for r in batch.reqs], [])
        self.last_extend = None
        if self.running_batch.is_empty():
            self.pending = NOTHING
            self.on_idle()
            return self.plan([], [])
        retracted = self.make_decode_room()
        self.running_batch.output_ids = self.s.torch.tensor([r.output_ids[-1] for r in self.running_batch.reqs])
        self.running_batch.prepare_for_decode()
        self.pending = self.running_batch
        return self.plan([(int(r.rid), 1) for r in self.running_batch.reqs], retracted)

    def on_idle(self) -> None:
        """A step that runs no batch (SGLang's `Scheduler.on_idle`): nothing to do at a fixed ratio."""

    def make_decode_room(self) -> list[int]:
        """The memory check of SGLang's `Scheduler.update_running_batch`: the rids retracted, if any."""
        return [] if self.running_batch.check_decode_mem() else self.retract()

    def retract(self) -> list[int]:
        """SGLang's decode finds too little free KV: here, where the plain protocol cannot say so, a crash
        (the adapter behind the paged protocol, `sglang_paged`, runs SGLang's retraction instead)."""
        raise Retracted(f"SGLang's decode of {[int(r.rid) for r in self.running_batch.reqs]} finds too little free "
                        "KV and would retract a request (its KV freed, back to the waiting queue)")

    def plan(self, entries: list[tuple[int, int]], retracted: list[int]) -> list[tuple[int, int]]:
        """The plan returned: the plain protocol's (rid, n) entries."""
        return entries

    def _merge_last_extend(self) -> None:
        """The start of SGLang's get_next_batch_to_run: checkpoint a chunk, merge the last prefill batch's
        unfinished, unchunked requests into the running batch, drop the finished."""
        if self.chunked is not None and self.chunked.extend_end > self.chunked.prefix_len:
            self.s.checkpoint_kv_cache(self.chunked, self.tree)
        last, self.last_extend = self.last_extend, None
        if last is not None:
            last.filter_batch(reqs_to_exclude=[self.chunked] if self.chunked is not None else [])
            if not last.is_empty():
                if self.running_batch.is_empty():
                    self.running_batch = last
                else:
                    self.running_batch.merge_batch(last)
        self.running_batch.filter_batch()
        self.running_batch.batch_is_full = False

    def _prefill(self) -> Any:
        """SGLang's admission (the plain path of Scheduler._get_new_batch_prefill_raw), or None."""
        if not self.waiting_queue and self.chunked is None:
            return None
        if self._allocatable(0) <= 0 and self.chunked is None:
            return None
        self.policy.calc_priority(self.waiting_queue, self.running_batch)
        adder = self.adder()
        if self.chunked is not None:
            self.chunked.init_next_round_input()
            self.chunked = adder.add_chunked_req(self.chunked)
        for req in self.waiting_queue:
            if adder.budget_state() == self.s.AddReqResult.OTHER:
                break
            if len(adder.can_run_list) >= self._allocatable(sum(r.kv.holds_kv for r in adder.can_run_list)):
                break
            req.init_next_round_input(self.tree)
            if adder.add_one_req(req, has_chunked_req=self.chunked is not None,
                                 truncation_align_size=None) != self.s.AddReqResult.CONTINUE:
                break
        if not adder.can_run_list:
            return None
        admitted = set(adder.can_run_list)
        self.waiting_queue = [r for r in self.waiting_queue if r not in admitted]
        if adder.new_chunked_req is not None:
            self.chunked = adder.new_chunked_req
        if self.chunked is not None:
            self.chunked.inflight_middle_chunks += 1
        batch = self.s.ScheduleBatch.init_new(adder.can_run_list, self.rows, self.allocator, self.tree,
                                              model_config(), False, self.s.SpeculativeAlgorithm.NONE,
                                              chunked_req=self.chunked)
        batch.prepare_for_extend()
        return batch

    def _allocatable(self, held_rows: int) -> int:
        """Requests a prefill may still admit: SGLang's free request rows (max_seqs in all) plus those the
        counted requests hold, less the running batch's."""
        return min(self.max_seqs - len(self.running_batch.reqs), self.rows.available_size() + held_rows)

    def complete(self, plan: object) -> list[int]:
        batch, self.pending = self.pending, None
        if batch is None:
            raise RuntimeError("complete() without a pending schedule()")
        emitted: list[int] = []
        if batch is NOTHING:
            return emitted
        for req in batch.reqs:
            if req.inflight_middle_chunks > 0:  # a chunk short of the prompt's end samples nothing
                req.inflight_middle_chunks -= 1
                continue
            req.output_ids.append(self.sampled_token(req))
            req.update_finish_state()
            emitted.append(int(req.rid))
            if req.finished():
                self.s.release_kv_cache(req, self.tree, checkpoint=True)
            elif batch is not self.running_batch:
                self.s.checkpoint_kv_cache(req, self.tree)
        if batch is self.running_batch:
            batch.filter_batch()
        return emitted


    def sampled_token(self, req: Any) -> int:
        """The token the faked forward pass samples for `req`: never its EOS here."""
        return SAMPLED_TOKEN


class SglangDefaultRatio(SglangScheduler):
    """SGLang's policy with its default initial new_token_ratio, 0.7, held fixed (see the docstring)."""

    new_token_ratio: ClassVar[float] = 0.7

    @property
    def free_kv(self) -> int | None:
        """None: at 0.7 SGLang's account is an estimate (each running request's remaining max_new times
        0.7), not a count of tokens, so KV is judged on the plans alone (the report says partial)."""
        return None
