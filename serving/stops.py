"""Stop strings found inside the scheduler, so that stallfree hears them as stops (rule TOKENS: a stop
on the token that completed the string), not as cancels between steps.

vLLM finds stop strings in its detokenizer, outside the engine core, once the step that emitted the
last token is over; it then aborts the request. Here each request with stop strings gets vLLM's own
incremental detokenizer (`IncrementalDetokenizer.from_new_request`, the class and the tokenizer the
engine's output processor uses for it), fed the same new tokens in `update_from_output`, so the
scheduler finds the same string on the same token. The engine's later abort then names a request
already ended, which vLLM ignores.

With no tokenizer (`skip_tokenizer_init`), vLLM finds no stop strings either, and none is watched.
"""

from __future__ import annotations

from typing import Any

from vllm.tokenizers import cached_tokenizer_from_config
from vllm.v1.engine.detokenizer import IncrementalDetokenizer

MAX_ENDS = 4096  # how many ends a scheduler remembers (a server runs for ever)


class StopStrings:
    """The detokenizers of the live requests that have stop strings."""

    def __init__(self, model_config: Any) -> None:
        self._model_config = model_config
        self._tokenizer: Any = None
        self._watched: dict[str, Any] = {}

    def watch(self, request: Any) -> None:
        params = request.sampling_params
        if params is None or not params.stop or self._model_config.skip_tokenizer_init:
            return
        if self._tokenizer is None:
            self._tokenizer = cached_tokenizer_from_config(self._model_config)
        self._watched[request.request_id] = IncrementalDetokenizer.from_new_request(self._tokenizer, request)

    def found(self, request_id: str, new_token_ids: list[int]) -> bool:
        """Whether `new_token_ids` complete one of the request's stop strings."""
        detokenizer = self._watched.get(request_id)
        return detokenizer is not None and bool(new_token_ids) and detokenizer.update(new_token_ids, False) is not None

    def forget(self, request_id: str) -> None:
        self._watched.pop(request_id, None)


def remember(ends: dict[str, str], request_id: str, how: str) -> None:
    """Record how a request ended, keeping the latest MAX_ENDS."""
    ends[request_id] = how
    while len(ends) > MAX_ENDS:
        del ends[next(iter(ends))]
