"""Bugs planted into subclasses of SGLang's own classes behind the adapter with stops and cancels
(`sglang_ends`), for showing that the lifecycle rules catch what breaks in a real engine's stop and
abort code where SGLang itself holds them:

- `StopIgnored`: a subclass of SGLang's `Req` whose stop-token check never matches, so a request that
  samples its EOS runs on (TOKENS: planned after it stopped);
- `StopStringMissed`: the same for SGLang's stop-string check, behind `SglangStopStrings` (TOKENS);
- `AbortLeavesWaiting`: a subclass of SGLang's `Scheduler` whose `abort_request` does not search the
  waiting queue, so a cancelled waiting request is admitted later (CANCEL);
- `ChunkAbortLeaks`: a subclass of SGLang's `Scheduler` whose pending chunked-prefill abort ends the
  request but never releases its KV and its request row, so the requests behind it wait forever
  (PROGRESS).

The rest is SGLang's code unchanged.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .sglang_ends import SglangEnds, SglangStopStrings, aborting_scheduler
from .sglang_setup import sglang, sglang_aborts


@cache
def _stop_ignored() -> type:
    class _StopIgnored(sglang().Req):  # type: ignore[misc, name-defined]
        def _check_token_based_finish(self, new_accepted_tokens: Any) -> bool:
            return False  # the bug: EOS read as an ordinary token
    return _StopIgnored


@cache
def _stop_string_missed() -> type:
    class _StopStringMissed(sglang().Req):  # type: ignore[misc, name-defined]
        def _check_str_based_finish(self, new_accepted_len: int = 1) -> bool:
            return False  # the bug: the decoded tail is never searched for the stop string
    return _StopStringMissed


@cache
def _abort_leaves_waiting() -> type:
    class _AbortLeavesWaiting(aborting_scheduler()):  # type: ignore[misc, valid-type]
        def abort_request(self, recv_req: Any) -> None:
            waiting, self.waiting_queue = self.waiting_queue, []  # the bug: the waiting queue is not searched
            try:
                super().abort_request(recv_req)
            finally:
                self.waiting_queue = waiting
    return _AbortLeavesWaiting


@cache
def _chunk_abort_leaks() -> type:
    class _ChunkAbortLeaks(aborting_scheduler()):  # type: ignore[misc, valid-type]
        def process_pending_chunked_abort(self) -> None:
            req = self._pending_chunked_abort_req
            if req is None or req is not self.chunked_req:
                super().process_pending_chunked_abort()
                return
            req.finished_reason, req.to_finish = sglang_aborts().FINISH_ABORT(), None
            self.chunked_req = self._pending_chunked_abort_req = None  # the bug: no release_kv_cache
    return _ChunkAbortLeaks


class StopIgnored(SglangEnds):
    """The adapter over a subclass of SGLang's Req that never sees its EOS."""

    def req_class(self) -> type | None:
        return _stop_ignored()


class StopStringMissed(SglangStopStrings):
    """The adapter with stop strings over a subclass of SGLang's Req that never matches one."""

    def req_class(self) -> type | None:
        return _stop_string_missed()


class AbortLeavesWaiting(SglangEnds):
    """The adapter over a subclass of SGLang's Scheduler whose abort misses the waiting queue."""

    def scheduler_class(self) -> type:
        return _abort_leaves_waiting()


class ChunkAbortLeaks(SglangEnds):
    """The adapter over a subclass of SGLang's Scheduler whose chunked-prefill abort keeps the KV."""

    def scheduler_class(self) -> type:
        return _chunk_abort_leaks()


CAUGHT_BY: dict[type, str] = {  # each planted bug, and the rule it breaks
    StopIgnored: "TOKENS", StopStringMissed: "TOKENS", AbortLeavesWaiting: "CANCEL", ChunkAbortLeaks: "PROGRESS"}
