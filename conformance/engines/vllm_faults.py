"""Bugs planted into subclasses of vLLM's own V1 scheduler, each behind the paged adapter, for showing
that `stallfree conform ... --profile paged` catches what breaks in a real engine's preemption code.

Each overrides one method of vLLM's `Scheduler` and leaves the rest of vLLM's decisions alone:

| adapter | the bug in vLLM's scheduler | caught by |
|---|---|---|
| `ResumeWithoutRecompute` | a preempted request keeps its computed-token count, though its blocks were freed: it resumes as if its KV were still there | RECOMPUTE |
| `PreemptOldest` | the victim is the oldest running request, not the newest | PREEMPT-BOUND (vLLM then also fails its own assertion) |
| `FreedBlockCountedTwice` | freeing a request's blocks counts one of them twice in the pool's free count | BLOCKS |
| `PreemptedForever` | a preempted request is parked outside the waiting queue and never resumed | TOKENS-KEPT (dropped before its last token) |
| `StopIgnored` | the stop check reads the EOS token as an ordinary one: a stopped request keeps running | TOKENS-KEPT |
| `SkipUncachedBlock` (prefix caching on) | the prefix-cache lookup counts one block more than it found: a block that was never cached is skipped, never prefilled | HIT-SAME-TOKENS |
"""

from __future__ import annotations

from typing import Any

from .vllm_paged import VllmPagedScheduler
from .vllm_prefix import VllmPrefixScheduler
from .vllm_setup import EOS_TOKEN, SAMPLED_TOKEN, Scheduler


class _ResumeWithoutRecompute(Scheduler):
    def _preempt_request(self, request: Any, *args: Any, **kwargs: Any) -> None:
        computed = request.num_computed_tokens
        super()._preempt_request(request, *args, **kwargs)
        request.num_computed_tokens = computed  # the bug: its blocks are gone, its count is not


class _OldestFirst(list):  # type: ignore[type-arg]
    """vLLM's running list whose pop() (the victim) takes the oldest request."""

    def pop(self, index: int = -1) -> Any:
        return super().pop(0 if index == -1 else index)

    def __getitem__(self, index: Any) -> Any:
        return super().__getitem__(0 if index == -1 else index)


class _PreemptOldest(Scheduler):
    def schedule(self, *args: Any, **kwargs: Any) -> Any:
        self.running = _OldestFirst(self.running)  # the bug: the victim is running[0]
        try:
            return super().schedule(*args, **kwargs)
        finally:
            self.running = list(self.running)


class _FreedBlockCountedTwice(Scheduler):
    def _free_request_blocks(self, request: Any) -> None:
        held = any(self.kv_cache_manager.get_block_ids(request.request_id))
        super()._free_request_blocks(request)
        if held:
            self.kv_cache_manager.block_pool.free_block_queue.num_free_blocks += 1  # the bug


class _PreemptedForever(Scheduler):
    def _preempt_request(self, request: Any, *args: Any, **kwargs: Any) -> None:
        super()._preempt_request(request, *args, **kwargs)
        self.waiting.remove_request(request)  # the bug: parked, never resumed


class _StopIgnored(Scheduler):
    def update_from_output(self, scheduler_output: Any, model_runner_output: Any) -> Any:
        model_runner_output.sampled_token_ids = [  # the bug: EOS is not seen as a stop
            [SAMPLED_TOKEN if t == EOS_TOKEN else t for t in ids] for ids in model_runner_output.sampled_token_ids]
        return super().update_from_output(scheduler_output, model_runner_output)


class _SkipUncachedBlock(Scheduler):
    def _get_local_prefix_cache_hit(self, request: Any) -> Any:
        blocks, num_local, *rest = super()._get_local_prefix_cache_hit(request)
        if num_local + self.block_size <= request.num_tokens - 1:
            num_local += self.block_size  # the bug: one block more than the cache holds is taken as cached
        return (blocks, num_local, *rest)


class ResumeWithoutRecompute(VllmPagedScheduler):
    scheduler_cls = _ResumeWithoutRecompute


class PreemptOldest(VllmPagedScheduler):
    scheduler_cls = _PreemptOldest


class FreedBlockCountedTwice(VllmPagedScheduler):
    scheduler_cls = _FreedBlockCountedTwice


class PreemptedForever(VllmPagedScheduler):
    scheduler_cls = _PreemptedForever


class StopIgnored(VllmPagedScheduler):
    scheduler_cls = _StopIgnored


class SkipUncachedBlock(VllmPrefixScheduler):
    scheduler_cls = _SkipUncachedBlock


CAUGHT_BY: dict[type[VllmPagedScheduler], str] = {  # each planted bug, and the paged rule it breaks
    ResumeWithoutRecompute: "RECOMPUTE", PreemptOldest: "PREEMPT-BOUND", FreedBlockCountedTwice: "BLOCKS",
    PreemptedForever: "TOKENS-KEPT", StopIgnored: "TOKENS-KEPT",
}
