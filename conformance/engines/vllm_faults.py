"""Bugs planted into subclasses of vLLM's own V1 scheduler, each behind the paged adapter, for showing
that `stallfree conform ... --profile paged` catches what breaks in a real engine's preemption code.

Each overrides one method of vLLM's `Scheduler` and leaves the rest of vLLM's decisions alone:

- `ResumeWithoutRecompute`: a preempted request keeps its computed-token count though its blocks were
  freed, so it resumes as if its KV were still there (RECOMPUTE);
- `PreemptOldest`: the victim is the oldest running request, not the newest (PREEMPT-BOUND; vLLM then
  fails its own assertion, a CRASH);
- `FreedBlockCountedTwice`: freeing a request's blocks counts one of them twice in the free count (BLOCKS);
- `PreemptedForever`: a preempted request is parked outside the waiting queue, never resumed (TOKENS-KEPT);
- `StopIgnored`: the stop check reads EOS as an ordinary token, a stopped request runs on (TOKENS-KEPT);
- `SkipUncachedBlock` (prefix caching on): the cache lookup counts one block more than it found
  (HIT-SAME-TOKENS).
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


def _adapter(bug: type, base: type[VllmPagedScheduler] = VllmPagedScheduler) -> type[VllmPagedScheduler]:
    """The adapter `base` over the planted `bug` (a subclass of vLLM's scheduler), named as the bug."""
    doc = f"The adapter over vLLM's scheduler with the bug {bug.__name__}."
    return type(bug.__name__.lstrip("_"), (base,), {"scheduler_cls": bug, "__module__": __name__, "__doc__": doc})


ResumeWithoutRecompute = _adapter(_ResumeWithoutRecompute)
PreemptOldest = _adapter(_PreemptOldest)
FreedBlockCountedTwice = _adapter(_FreedBlockCountedTwice)
PreemptedForever = _adapter(_PreemptedForever)
StopIgnored = _adapter(_StopIgnored)
SkipUncachedBlock = _adapter(_SkipUncachedBlock, VllmPrefixScheduler)


CAUGHT_BY: dict[type[VllmPagedScheduler], str] = {  # each planted bug, and the paged rule it breaks
    ResumeWithoutRecompute: "RECOMPUTE", PreemptOldest: "PREEMPT-BOUND", FreedBlockCountedTwice: "BLOCKS",
    PreemptedForever: "TOKENS-KEPT", StopIgnored: "TOKENS-KEPT",
}
