"""Bugs planted into subclasses of SGLang's own classes, behind the SGLang adapter, for showing that
`stallfree conform` catches what breaks in a real engine's code:

- `ChunkOneOver`: the adder's chunk bound starts one token past `chunked_prefill_size` (an off-by-one),
  so a long prompt's chunk overruns the token budget (BUDGET). The rest is SGLang's adder unchanged.
- `FinishedKvPinned`: SGLang's `RadixCache` takes a lock on a finished request's tree node again once
  `release_kv_cache` has dropped it, so that request's KV stays pinned, neither free nor evictable: a
  leak the adapter's `free_kv` (SGLang's own account) shows on the step the request finishes (KV).
- `RecomputeSkipsOutput`, behind the paged adapter (`sglang_paged`): SGLang's `Req`, once retracted,
  rebuilds its fill from its prompt alone, so its re-prefill skips the tokens it had emitted and the
  request resumes without recomputing them (RECOMPUTE).
- `RetractLeaksKv`, behind the adapter with SGLang's decaying ratio (`sglang_decay`): SGLang's
  `RadixCache`, releasing a retracted request (a release that is not a checkpoint), takes one token
  back out of the allocator, so a retraction frees one token less than the request held: a leak of
  one token per retraction (BLOCKS).
- `HitsLastToken`, behind the adapter with the radix cache on (`sglang_radix`): SGLang's `Req` lets its
  radix match run to the prompt's last token (`_compute_max_prefix_len` without its "- 1"), so a
  prompt wholly in the cache is served whole and leaves no token to compute (HIT-SAME-TOKENS).
"""

from __future__ import annotations

from array import array
from functools import cache
from typing import Any

from .sglang_adapter import SglangScheduler
from .sglang_decay import SglangDecayingRatio
from .sglang_paged import SglangPaged
from .sglang_radix import SglangRadix, prompt_ids
from .sglang_setup import make_req, sglang


@cache
def _chunk_one_over() -> type:
    class _ChunkOneOver(sglang().PrefillAdder):  # type: ignore[misc, name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if self.rem_chunk_tokens is not None:
                self.rem_chunk_tokens += 1  # the bug: one token past chunked_prefill_size
    return _ChunkOneOver


@cache
def _finished_kv_pinned() -> type:
    class _FinishedKvPinned(sglang().RadixCache):  # type: ignore[misc, name-defined]
        def on_release(self, req: Any, *, checkpointed: bool) -> None:
            super().on_release(req, checkpointed=checkpointed)
            if req.finished():
                req.lock = self.lock(req.last_node)  # the bug: the finished request's KV pinned again
    return _FinishedKvPinned


@cache
def _recompute_skips_output() -> type:
    class _RecomputeSkipsOutput(sglang().Req):  # type: ignore[misc, name-defined]
        def refresh_fill_ids(self) -> None:
            super().refresh_fill_ids()
            if self.is_retracted:  # the bug: the re-prefill of a retracted request is its prompt alone
                self.full_untruncated_fill_ids = array("q", self.origin_input_ids)
    return _RecomputeSkipsOutput


@cache
def _retract_leaks_kv() -> type:
    class _RetractLeaksKv(sglang().RadixCache):  # type: ignore[misc, name-defined]
        def on_release(self, req: Any, *, checkpointed: bool) -> None:
            super().on_release(req, checkpointed=checkpointed)
            if not checkpointed and not req.finished():  # the bug: one of a retraction's tokens kept
                self.token_to_kv_pool_allocator.alloc(1)
    return _RetractLeaksKv


@cache
def _hits_last_token() -> type:
    class _HitsLastToken(sglang().Req):  # type: ignore[misc, name-defined]
        def _compute_max_prefix_len(self, input_len: int) -> int:
            return input_len  # the bug: SGLang's bound is input_len - 1, the last token always computed
    return _HitsLastToken


class ChunkOneOver(SglangScheduler):
    """The adapter over a subclass of SGLang's PrefillAdder with the bug _ChunkOneOver."""

    def adder_class(self) -> type:
        return _chunk_one_over()


class FinishedKvPinned(SglangScheduler):
    """The adapter over a subclass of SGLang's RadixCache with the bug _FinishedKvPinned."""

    def tree_class(self) -> type:
        return _finished_kv_pinned()


class RecomputeSkipsOutput(SglangPaged):
    """The paged adapter over a subclass of SGLang's Req with the bug _RecomputeSkipsOutput."""

    def request(self, rid: int, prompt_len: int, max_new: int) -> Any:
        return make_req(rid, prompt_len, max_new, _recompute_skips_output())


class RetractLeaksKv(SglangDecayingRatio):
    """The adapter with SGLang's decaying ratio over a subclass of SGLang's RadixCache with the bug
    _RetractLeaksKv."""

    def tree_class(self) -> type:
        return _retract_leaks_kv()


class HitsLastToken(SglangRadix):
    """The adapter with the radix cache on over a subclass of SGLang's Req with the bug _HitsLastToken."""

    def request(self, rid: int, prompt_len: int, max_new: int, content: tuple[tuple[int, int], ...] = ()) -> Any:
        return make_req(rid, prompt_len, max_new, _hits_last_token(), ids=prompt_ids(rid, prompt_len, content))


CAUGHT_BY: dict[type, str] = {  # each planted bug, and the rule it breaks
    ChunkOneOver: "BUDGET", FinishedKvPinned: "KV", RecomputeSkipsOutput: "RECOMPUTE", RetractLeaksKv: "BLOCKS",
    HitsLastToken: "HIT-SAME-TOKENS"}
