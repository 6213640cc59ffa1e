"""SGLang's policy with its `new_token_ratio` moving as SGLang's scheduler moves it, its retraction
said through the paged protocol (docs/paged.md), for
`stallfree conform stallfree.conformance.engines.sglang_decay:SglangDecayingRatio --profile paged`.

`sglang_paged.SglangPaged` holds the ratio at SGLang's default initial value, 0.7. SGLang's scheduler
keeps it in a `NewTokenRatioTracker` and moves it three ways; this adapter keeps SGLang's own tracker
and calls it where SGLang's `Scheduler` does (that class cannot be built without a model, so its three
call sites are mirrored, not run):

- Built by SGLang's `NewTokenRatioTracker.from_config()`: initial 0.7 (`SGLANG_INIT_NEW_TOKEN_RATIO`
  times `schedule_conservativeness`, 1.0), floor 0.7 x 0.14 = 0.098
  (`SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR`), falling by (0.7 - 0.098) / 600 a step
  (`SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS`). Each step's `PrefillAdder` is built with its `current`.
- `decay_step()` on every decode step whose memory check passes (`Scheduler.update_running_batch`:
  no retraction, the ratio falls one decay; a prefill step leaves it).
- On a retraction, `current` becomes the estimate `ScheduleBatch.retract_decode` returns (SGLang's
  `estimate_new_token_ratio_after_retract` over the kept requests: (tokens out + 20 per request) /
  (their max_new + 1), at most 1.0), as `update_running_batch` sets it.
- `reset()` to the initial ratio on a step that runs no batch while SGLang is fully idle (nothing
  waiting, running or chunked: `Scheduler.on_idle` past its `is_fully_idle` gate).

A falling ratio charges running requests less of their remaining tokens, so SGLang admits more and
retracts sooner: that is what the paged protocol is for. The pool, queues, `add()` and the radix cache
(off) are `SglangPaged`'s.
"""

from __future__ import annotations

from typing import Any

from .sglang_paged import SglangPaged


class SglangDecayingRatio(SglangPaged):
    """SGLang's policy with its own decaying new_token_ratio and its retraction (see the docstring)."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.ratio_tracker: Any = self.s.NewTokenRatioTracker.from_config()

    def ratio(self) -> float:
        """SGLang's tracker's current ratio."""
        return float(self.ratio_tracker.current)

    def make_decode_room(self) -> list[int]:
        """`update_running_batch`: retract when the decode does not fit, else decay the ratio one step."""
        if not self.running_batch.check_decode_mem():
            return self.retract()
        self.ratio_tracker.decay_step()
        return []

    def after_retraction(self, ratio: float) -> None:
        self.ratio_tracker.current = ratio

    def on_idle(self) -> None:
        """`on_idle`: the ratio back to its initial value once nothing waits, runs or is chunked."""
        if not self.waiting_queue and self.chunked is None and self.running_batch.is_empty():
            self.ratio_tracker.reset()
