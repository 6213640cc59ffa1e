"""vLLM V1's scheduler with stallfree making every decision: pass a class of this module to vLLM as
its `scheduler_cls` (`ReservationScheduler`, `PagedScheduler`; by name, for a server:
`stallfree.serving.vllm_scheduler.PagedScheduler`).

What is stallfree's and what is vLLM's:

- stallfree's (`stallfree.reference` or `stallfree.paged`, under the design's monitor, `Live`): which
  requests run, the tokens each gets, admission, the end of each request (its last token, a stop, a
  cancel), and for the paged design which requests are preempted.
- vLLM's: its KV cache manager allocates the blocks of each planned chunk and decode (as its own
  scheduler would), its `SchedulerOutput` carries the plan to the model runner, and its
  `update_from_output` appends the sampled tokens, checks EOS, stop tokens and max_tokens, frees
  finished requests and builds the engine's outputs. Its waiting and running queues are kept as the
  plan moves requests, since the engine reads them; nothing is decided from them.

The words mapped: budget = max_num_batched_tokens, slots = max_num_seqs, K = the pool's blocks less
the null block (`mapping`); a request's max_new is its max_tokens (the reservation design rounds the
reservation up to whole blocks, `mapping.reserved_max_new`); an end vLLM finds in
`update_from_output` (EOS, a stop token, max_tokens under a rounded reservation) is a stop on that
step's token; `finish_requests` (a client's abort, a stop string found by the detokenizer) is a cancel.

Checks of the adapter's own, besides the monitor's rules (`Disagreement` if one fails): the rids that
emitted are the requests vLLM sampled a token for; a planned chunk fits the request's tokens left, and
vLLM's allocation of it never fails; after each step vLLM's free blocks are at least the design's
(reservation) or exactly them (paged). Memory disagreements name KV or BLOCKS.

Options: vLLM's `additional_config={"stallfree": {"on_violation": "log", "monitor": false}}`
("stop", the default, stops the engine before a broken plan runs; "log" logs and goes on; monitor
false drives the scheduler with no monitor, for measuring its cost).
"""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

from vllm.v1.core.sched.output import NewRequestData, SchedulerOutput
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.request import RequestStatus

from stallfree.paged import Scheduler as PagedCore
from stallfree.reference import Scheduler as ReferenceCore
from stallfree.spec.types import Config

from .live import LOG, Live
from .mapping import PAGED, RESERVATION, Deployment, Unmapped, check, reserved_max_new
from .stops import StopStrings, remember


class Disagreement(RuntimeError):
    """stallfree's plan and vLLM's state disagree: the engine stops, since neither can be trusted past it."""


def deployment_of(vllm_config: Any, kv_cache_config: Any, block_size: int) -> Deployment:
    """The plain values the mapping judges, read off vLLM's configs."""
    sched, cache = vllm_config.scheduler_config, vllm_config.cache_config
    return Deployment(
        max_num_batched_tokens=sched.max_num_batched_tokens, max_num_seqs=sched.max_num_seqs,
        num_blocks=kv_cache_config.num_blocks, block_size=block_size,
        max_model_len=vllm_config.model_config.max_model_len,
        enable_prefix_caching=bool(cache.enable_prefix_caching),
        speculative=vllm_config.speculative_config is not None, async_scheduling=bool(sched.async_scheduling),
        chunked_prefill=bool(sched.enable_chunked_prefill), policy=str(sched.policy),
        long_prefill_token_threshold=sched.long_prefill_token_threshold,
        pipeline_parallel_size=vllm_config.parallel_config.pipeline_parallel_size,
        kv_transfer=vllm_config.kv_transfer_config is not None,
        num_kv_groups=len(kv_cache_config.kv_cache_groups),
    )


def options_of(vllm_config: Any) -> dict[str, Any]:
    extra = vllm_config.additional_config if isinstance(vllm_config.additional_config, dict) else {}
    options = extra.get("stallfree", {})
    unknown = set(options) - {"on_violation", "monitor", "report"}
    if unknown:
        raise Unmapped(f"additional_config.stallfree: unknown option(s) {sorted(unknown)}; the options are "
                       "on_violation (stop | log), monitor (true | false) and report (a JSON file written at shutdown)")
    return options


class StallfreeScheduler(Scheduler):
    """vLLM's scheduler whose decisions are stallfree's `design` (a subclass names it)."""

    design: ClassVar[str]
    pool_exact: ClassVar[bool] = False  # the design's free blocks are vLLM's exactly, not a bound

    def __init__(self, vllm_config: Any, kv_cache_config: Any, structured_output_manager: Any, block_size: int,
                 *args: Any, **kwargs: Any) -> None:
        config = self.contract(deployment_of(vllm_config, kv_cache_config, block_size))
        options = options_of(vllm_config)
        super().__init__(vllm_config, kv_cache_config, structured_output_manager, block_size, *args, **kwargs)
        self.stallfree_block_size = block_size
        self.live = Live(self.make_core(config, block_size), config, self.design,
                         on_violation=options.get("on_violation", "stop"), monitored=options.get("monitor", True))
        self._rid_of: dict[str, int] = {}  # vLLM's request id -> the contract's rid, while live in stallfree
        self._id_of: dict[int, str] = {}
        self._max_new: dict[str, int] = {}  # the max_new stallfree was given
        self._emitted: dict[str, int] = {}  # tokens vLLM sampled for each request live in stallfree
        self._next_rid = 0
        self._cancelled_now: set[int] = set()  # cancelled while the plan was pending
        self._report_path: str | None = options.get("report")
        self._stop_strings = StopStrings(vllm_config.model_config)
        self.ends: dict[str, str] = {}  # vLLM's request id -> how stallfree heard it end: stop, cancel, length

    def contract(self, deployment: Deployment) -> Config:
        """The contract's config for vLLM's deployment (Unmapped listing what does not map)."""
        return check(deployment, self.design)

    def make_core(self, config: Config, block_size: int) -> Any:
        """The stallfree scheduler making the decisions: each design's class builds its own; the base
        class names no design, so vLLM given it as `scheduler_cls` stops at start-up saying which to use."""
        raise TypeError(f"{type(self).__name__} names no design: give vLLM ReservationScheduler or PagedScheduler")

    def contract_max_new(self, prompt_len: int, max_tokens: int) -> int:
        return max_tokens

    # -- requests in and out ------------------------------------------------------------------

    def add_request(self, request: Any) -> None:
        why = refused_request(request)
        if why is not None:
            raise Unmapped(f"request {request.request_id}: {why}")
        if request.request_id in self.requests:
            raise Unmapped(f"request {request.request_id}: a second request with a live id (a streaming-input "
                           "session) does not map: the contract's requests have one prompt")
        rid, max_new = self._next_rid, self.contract_max_new(request.num_prompt_tokens, request.max_tokens)
        self.live.add(rid, request.num_prompt_tokens, max_new)  # raises, naming it, if the design refuses it
        self._next_rid += 1
        self._rid_of[request.request_id], self._id_of[rid] = rid, request.request_id
        self._max_new[request.request_id], self._emitted[request.request_id] = max_new, 0
        self._stop_strings.watch(request)
        super().add_request(request)

    def finish_requests(self, request_ids: Any, finished_status: Any) -> Any:
        """A finish from outside the scheduler (a client's abort, a stop string): a cancel of each live one."""
        if request_ids is None:
            ids = list(self.requests)
        else:
            ids = [request_ids] if isinstance(request_ids, str) else list(request_ids)
        pending = self.live.pending
        for request_id in ids:
            rid = self._rid_of.pop(request_id, None)
            if rid is not None:
                self._forget(request_id, rid)
                self.live.cancel(rid)
                remember(self.ends, request_id, "cancel")
                if pending:
                    self._cancelled_now.add(rid)
        return super().finish_requests(ids, finished_status)

    # -- one step -----------------------------------------------------------------------------

    def schedule(self, throttle_prefills: bool = False) -> SchedulerOutput:
        """The plan stallfree's scheduler makes (judged by the monitor before it goes further), carried out
        on vLLM's KV cache manager and handed to the model runner as vLLM's SchedulerOutput."""
        self.current_step += 1
        self.kv_cache_manager.new_step_starts()
        plan = self.live.plan()
        self._preempt(getattr(plan, "preempted", ()))
        new, resumed, running, blocks, tokens = [], [], [], {}, {}
        for rid, n in plan:
            request = self._request(rid)
            admitted = request.status in (RequestStatus.WAITING, RequestStatus.PREEMPTED)
            if admitted:
                self._admit(request)
                (new if request.status == RequestStatus.WAITING else resumed).append(request)
            else:
                running.append(request)
            remaining = request.num_tokens - request.num_computed_tokens
            if not 1 <= n <= remaining:
                raise Disagreement(f"step {self.live.num_steps}: stallfree plans {n} tokens for rid {rid} "
                                   f"(vLLM {request.request_id}), which has {remaining} tokens to compute")
            blocks[request.request_id] = self._allocate(request, n, admitted)
            tokens[request.request_id] = n
            if admitted:
                request.status = RequestStatus.RUNNING
        return self._output(new, resumed, running, blocks, tokens)

    def _request(self, rid: int) -> Any:
        request = self.requests.get(self._id_of.get(rid, ""))
        if request is None or request.is_finished():
            raise Disagreement(f"step {self.live.num_steps}: stallfree plans rid {rid}, which vLLM holds no live "
                               "request for")
        return request

    def _admit(self, request: Any) -> None:
        """Move `request` from vLLM's waiting queue to its running one (the plan admitted it)."""
        self.waiting.remove_request(request)
        self.running.append(request)
        request.num_computed_tokens = 0  # no prefix cache: every admission starts at position 0

    def _allocate(self, request: Any, n: int, admitted: bool) -> Any:
        # vLLM's watermark is for vLLM's own admission; stallfree's design has admitted already.
        blocks = self.kv_cache_manager.allocate_slots(request, n, has_scheduled_reqs=not admitted)
        if blocks is None:
            rule = "KV" if self.design == RESERVATION else "BLOCKS"
            raise Disagreement(f"step {self.live.num_steps} ({rule}): vLLM's pool has no blocks for {n} tokens of "
                               f"{request.request_id} ({self.kv_cache_manager.block_pool.get_num_free_blocks()} "
                               "free), though stallfree's account of the pool let it run")
        return blocks

    def _preempt(self, rids: Any) -> None:
        """The paged design's preemptions: each victim's blocks freed, back to the head of vLLM's line."""
        now = time.monotonic()
        for rid in rids:
            request = self._request(rid)
            self.running.remove(request)
            self._preempt_request(request, now)

    def _output(self, new: list[Any], resumed: list[Any], running: list[Any], blocks: dict[str, Any],
                tokens: dict[str, int]) -> SchedulerOutput:
        """vLLM's SchedulerOutput for the plan, built as vLLM's own schedule() builds it."""
        if self.use_v2_model_runner:
            new, resumed = new + resumed, []
            new_data = [NewRequestData.from_request(r, blocks[r.request_id].get_block_ids(), r._all_token_ids,
                                                    uses_mrope=self.model_uses_mrope) for r in new]
        else:
            new_data = [NewRequestData.from_request(r, blocks[r.request_id].get_block_ids(),
                                                    uses_mrope=self.model_uses_mrope) for r in new]
        cached = self._make_cached_request_data(running, resumed, tokens, {}, blocks)
        if not self.use_v2_model_runner:
            self.prev_step_scheduled_req_ids.clear()
            self.prev_step_scheduled_req_ids.update(tokens)
        self.kv_cache_manager.take_boundary_state_offloads()
        copies, _ = self.kv_cache_manager.take_kv_cache_block_copies()
        output = SchedulerOutput(
            scheduled_new_reqs=new_data, scheduled_cached_reqs=cached, num_scheduled_tokens=tokens,
            total_num_scheduled_tokens=sum(tokens.values()), scheduled_spec_decode_tokens={},
            scheduled_encoder_inputs={}, preempted_req_ids=self.reset_preempted_req_ids,
            finished_req_ids=self.finished_req_ids,
            free_encoder_mm_hashes=self.encoder_cache_manager.get_freed_mm_hashes(),
            new_block_ids_to_zero=self._get_new_block_ids_to_zero(), kv_cache_block_copies=copies or None,
            num_spec_tokens_to_schedule=self.num_spec_tokens,
            ec_manager_metadata=self.encoder_cache_manager.get_manager_metadata(),
        )
        if self.defer_block_free and output.total_num_scheduled_tokens > 0:
            self.sched_step_seq += 1
        self._update_after_schedule(output)
        return output

    def update_from_output(self, scheduler_output: Any, model_runner_output: Any) -> Any:
        """vLLM appends the sampled tokens and finds the ends; stallfree hears them as the step's
        completion, its stops, and checks that the rids it says emitted are those vLLM sampled for."""
        outputs = super().update_from_output(scheduler_output, model_runner_output)
        sampled, stopped = set(), []
        for engine_outputs in outputs.values():
            for o in engine_outputs.outputs:
                rid = self._rid_of.get(o.request_id)
                if rid is None:
                    continue
                if o.new_token_ids:
                    sampled.add(rid)
                    self._emitted[o.request_id] += len(o.new_token_ids)
                if o.finish_reason is None and self._stop_strings.found(o.request_id, o.new_token_ids):
                    # vLLM's detokenizer (the engine's, outside the scheduler) finds the same stop string
                    # in these tokens and aborts the request after this step: it ends here, on this token
                    super().finish_requests([o.request_id], RequestStatus.FINISHED_STOPPED)
                    stopped.append(rid)
                    self._end(o.request_id, rid, "stop")
                elif o.finish_reason is not None:  # EOS, a stop token, max_tokens, max_model_len
                    early = self._emitted[o.request_id] < self._max_new[o.request_id]
                    if early:
                        stopped.append(rid)  # an end before the contract's max_new: a stop on this token
                    self._end(o.request_id, rid, "stop" if early else "length")
        emitted = set(self.live.complete(stopped)) - self._cancelled_now
        if emitted != sampled - self._cancelled_now:
            raise Disagreement(f"step {self.live.num_steps - 1}: stallfree says rids {sorted(emitted)} emitted a "
                               f"token; vLLM sampled for {sorted(sampled)}")
        self._cancelled_now = set()
        self._check_pool()
        if not self._rid_of:
            self._write_report()  # idle: a server's report is current whenever it has nothing to do
        return outputs

    def _check_pool(self) -> None:
        """After each step: vLLM's blocks in use are within what the design accounts for (the paged
        design's: exactly its blocks)."""
        free = self.kv_cache_manager.block_pool.get_num_free_blocks()
        shown = self.design_free_blocks()
        if shown is not None and (free < shown or (self.pool_exact and free != shown)):
            rule = "KV" if self.design == RESERVATION else "BLOCKS"
            raise Disagreement(f"step {self.live.num_steps - 1} ({rule}): vLLM's pool has {free} free blocks; "
                               f"stallfree's {self.design} design accounts for {shown} free")

    def design_free_blocks(self) -> int | None:
        """The blocks the design says are free (a subclass says how it counts them)."""
        return None

    def _write_report(self) -> None:
        if self._report_path:
            with open(self._report_path, "w") as f:
                json.dump(self.live.summary(), f, indent=2)

    def shutdown(self) -> None:
        """The monitor's report, logged, and written to the report file if one was asked for (it is
        also written each time the scheduler goes idle: a server's engine process may be killed
        before its shutdown runs)."""
        LOG.warning("%s", self.live.report())
        self._write_report()
        super().shutdown()

    def _end(self, request_id: str, rid: int, how: str) -> None:
        del self._rid_of[request_id]
        self._forget(request_id, rid)
        remember(self.ends, request_id, how)

    def _forget(self, request_id: str, rid: int) -> None:
        del self._max_new[request_id], self._emitted[request_id], self._id_of[rid]
        self._stop_strings.forget(request_id)


def refused_request(request: Any) -> str | None:
    """Why a request does not map onto the contract, or None."""
    if request.use_structured_output:
        return "structured output (a grammar) does not map: the contract has no word for a request waiting on one"
    if request.has_encoder_inputs:
        return "multimodal inputs do not map: the contract plans token positions only"
    if request.resumable:
        return "a streaming-input session does not map: the contract's requests have one prompt"
    if request.pooling_params is not None:
        return "a pooling request does not map: the contract's requests emit max_new tokens"
    return None


class ReservationScheduler(StallfreeScheduler):
    """stallfree's reference: each request's prompt_len + max_tokens, in whole blocks, reserved at admission."""

    design = RESERVATION

    def make_core(self, config: Config, block_size: int) -> Any:
        return ReferenceCore(config.token_budget, config.max_seqs, config.kv_tokens)

    def contract_max_new(self, prompt_len: int, max_tokens: int) -> int:
        return reserved_max_new(prompt_len, max_tokens, self.stallfree_block_size)

    def design_free_blocks(self) -> int | None:
        """The pool less the running reservations (each whole blocks): vLLM may use fewer, never more."""
        return int(self.live.scheduler.free_kv) // self.stallfree_block_size


class PagedScheduler(StallfreeScheduler):
    """stallfree's paged design: blocks as tokens are computed, watermark admission, recompute preemption."""

    design = PAGED
    pool_exact = True

    def make_core(self, config: Config, block_size: int) -> Any:
        return PagedCore(config.token_budget, config.max_seqs, config.kv_tokens, block_size=block_size)

    def design_free_blocks(self) -> int | None:
        """The design's free blocks: vLLM's blocks, one for one."""
        return int(self.live.scheduler.free_blocks)
