"""SGLang's scheduling policy with stops and cancels: the SGLang adapter (`sglang_adapter`) with
`complete(plan, stopped)` and `cancel(rid)`, for
`stallfree conform stallfree.conformance.engines.sglang_ends:SglangEnds`.

What is SGLang's and what is the adapter's:

- Stops are SGLang's: each request carries an EOS token (`eos_token_ids`), the faked forward pass
  samples it for the requests the caller stops and an ordinary token for the rest, and SGLang's own
  `Req.update_finish_state` ends the first (FINISH_MATCHED_TOKEN); their KV goes back through
  `release_kv_cache` as any finished request's.
- Cancels are SGLang's abort code: `Scheduler.abort_request` and, at the start of the next step,
  `Scheduler.process_pending_chunked_abort`, SGLang's own methods, run on a `Scheduler` built without
  its constructor (no model, no sockets) whose queues are the adapter's (`waiting_queue`,
  `chunked_req`, `running_batch`, `last_batch`), its features off (no grammar, disaggregation, DLLM,
  multimodal or input polling). What its abort sends the tokenizer is noted (`told`), not sent.
  SGLang ends a waiting request at once (its method 1, popped from the queue) and a chunked one at
  the start of the next step (its KV released before that step is planned); a running request it
  only marks (`to_finish`, its method 3): "the request will still run one decode forward pass", so the
  next decode plans it once more. CANCEL says a running request ends at once: SGLang breaks it by design.
- `SglangStopStrings` stops by stop string instead: each request asks SGLang to stop at STOP_STRING,
  the stop sampled is a token whose text completes it, and SGLang's own stop-string check
  (`_check_str_based_finish`, over the tail of the output decoded) ends it (FINISH_MATCHED_STR), in
  the scheduler, on that token: a stop, not a cancel. The tokenizer it decodes with is the adapter's
  (no model's): an ordinary token reads " a", the stop token STOP_STRING.
- The adapter's: refusing a cancel the contract refuses (a rid that is not waiting or running, or one
  already cancelled): SGLang's abort ignores an unknown rid and takes a repeated one again. A cancel
  made while a plan is pending is handed to SGLang once that step's results are in, where SGLang's
  event loop reads its requests. A stop naming a rid that emits no token this step is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

from .sglang_adapter import SglangScheduler
from .sglang_setup import EOS_TOKEN, SAMPLED_TOKEN, make_req, rid_text, sglang_aborts

STOP_STRING = "<|stop|>"
STOP_STRING_TOKEN = 2  # the token whose text is STOP_STRING: neither EOS nor the ordinary token


class _NoGrammar:
    """The grammar queue of a Scheduler whose requests have no grammar: nothing to abort there."""

    def abort_requests(self, recv_req: object) -> None:
        return None


class _NoBeams:
    def retire_group(self, req: object) -> None:
        return None


@cache
def aborting_scheduler() -> type:
    """SGLang's Scheduler, its abort output noted rather than sent to a tokenizer."""

    class AbortingScheduler(sglang_aborts().Scheduler):  # type: ignore[misc, name-defined]
        def send_abort_output(self, abort_req: Any, req: Any) -> None:
            self.told.append(req.rid)

    return AbortingScheduler


def built(cls: type, tree: Any) -> Any:
    """An instance of `cls` (SGLang's Scheduler or a subclass) without its constructor, holding what its
    abort methods read besides the queues."""
    side = object.__new__(cls)
    side.tree_cache, side.told = tree, []
    side.chunked_req = side._pending_chunked_abort_req = side.mm_receiver = side.dllm_config = None
    side.disaggregation_mode = sglang_aborts().DisaggregationMode.NULL
    side.grammar_manager, side.beam_coordinator = _NoGrammar(), _NoBeams()
    side.enable_continuous_input_polling, side.result_queue = False, None
    return side


class SglangEnds(SglangScheduler):
    """SGLang's policy (new_token_ratio 1.0) with its stops and its aborts (see the module)."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.side = built(self.scheduler_class(), self.tree)
        self._stops: frozenset[str] = frozenset()
        self._cancelling: list[int] = []

    def scheduler_class(self) -> type:
        """The class whose abort methods run: SGLang's Scheduler (a planted fault subclasses it)."""
        return aborting_scheduler()

    def req_class(self) -> type | None:
        """The request class: SGLang's Req (None; a planted fault subclasses it)."""
        return None

    def request(self, rid: int, prompt_len: int, max_new: int) -> Any:
        return make_req(rid, prompt_len, max_new, self.req_class())

    def schedule(self) -> list[tuple[int, int]]:
        if self.pending is None:  # the top of SGLang's get_next_batch_to_run
            self._lend()
            self.side.process_pending_chunked_abort()
            self.chunked = self.side.chunked_req
        return super().schedule()

    def complete(self, plan: object, stopped: Iterable[int] = ()) -> list[int]:
        batch = self.pending
        if batch is None:
            raise RuntimeError("complete() without a pending schedule()")
        due = {r.rid for r in getattr(batch, "reqs", ()) if r.inflight_middle_chunks == 0}
        stops = set()
        for rid in stopped:
            if type(rid) is not int or rid_text(rid) not in due:
                raise ValueError(f"complete(): stopped names rid {rid!r:.40}, which emits no token in this step")
            stops.add(rid_text(rid))
        self._stops = frozenset(stops)
        try:
            emitted = super().complete(plan)
        finally:
            self._stops = frozenset()
        withdrawn, self._cancelling = self._cancelling, []
        for rid in withdrawn:
            self._abort(rid)
        return emitted

    def sampled_token(self, req: Any) -> int:
        return EOS_TOKEN if req.rid in self._stops else SAMPLED_TOKEN

    def cancel(self, rid: object) -> None:
        if type(rid) is not int:
            raise TypeError(f"cancel(rid): rid must be an int, got {type(rid).__name__} {rid!r:.40}")
        if rid in self._cancelling or not self._live(rid_text(rid)):
            raise KeyError(f"cancel({rid}): it is not waiting or running in SGLang (never added, ended, or "
                           "already cancelled)")
        if self.pending is not None:
            self._cancelling.append(rid)
        else:
            self._abort(rid)

    def _live(self, text: str) -> bool:
        """Whether request `text` is waiting or running, unended and not yet aborted."""
        side = self.side
        if side._pending_chunked_abort_req is not None and side._pending_chunked_abort_req.rid == text:
            return False
        batches = (self.running_batch, self.last_extend,
                   self.pending if self.pending is not self.running_batch else None)
        reqs = [*self.waiting_queue, *(r for b in batches if b is not None and hasattr(b, "reqs") for r in b.reqs)]
        if self.chunked is not None:
            reqs.append(self.chunked)
        return any(r.rid == text and not r.finished() and r.to_finish is None for r in reqs)

    def _abort(self, rid: int) -> None:
        self._lend()
        self.side.abort_request(sglang_aborts().AbortReq(rid=rid_text(rid)))

    def _lend(self) -> None:
        """Point SGLang's Scheduler at the adapter's queues: the batch that ran last is the prefill batch
        if the last step was one, else the running batch."""
        side = self.side
        side.waiting_queue, side.chunked_req, side.running_batch = self.waiting_queue, self.chunked, self.running_batch
        side.last_batch = self.last_extend if self.last_extend is not None else self.running_batch


class _Text:
    """The tokenizer SGLang's stop-string check decodes with: each token's text is fixed."""

    eos_token_id = None
    additional_stop_token_ids = None

    def decode(self, ids: Iterable[int], **kwargs: object) -> str:
        return "".join(STOP_STRING if t == STOP_STRING_TOKEN else " a" for t in ids)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [STOP_STRING_TOKEN] if text == STOP_STRING else [SAMPLED_TOKEN] * len(text)


class SglangStopStrings(SglangEnds):
    """SglangEnds whose stops are stop strings that SGLang's scheduler matches (see the module)."""

    def request(self, rid: int, prompt_len: int, max_new: int) -> Any:
        req = super().request(rid, prompt_len, max_new)
        req.tokenizer = _Text()
        req.sampling_params.stop_strs = [STOP_STRING]
        req.sampling_params.normalize(req.tokenizer)
        return req

    def sampled_token(self, req: Any) -> int:
        return STOP_STRING_TOKEN if req.rid in self._stops else SAMPLED_TOKEN
