"""A bug planted into a subclass of SGLang's own `PrefillAdder`, behind the SGLang adapter, for showing
that `stallfree conform` catches what breaks in a real engine's admission code:

- `ChunkOneOver`: the adder's chunk bound starts one token past `chunked_prefill_size` (an off-by-one),
  so a long prompt's chunk overruns the token budget (BUDGET). The rest is SGLang's adder unchanged.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .sglang_adapter import SglangScheduler
from .sglang_setup import sglang


@cache
def _chunk_one_over() -> type:
    class _ChunkOneOver(sglang().PrefillAdder):  # type: ignore[misc, name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if self.rem_chunk_tokens is not None:
                self.rem_chunk_tokens += 1  # the bug: one token past chunked_prefill_size
    return _ChunkOneOver


class ChunkOneOver(SglangScheduler):
    """The adapter over a subclass of SGLang's PrefillAdder with the bug _ChunkOneOver."""

    def adder_class(self) -> type:
        return _chunk_one_over()


CAUGHT_BY: dict[type, str] = {ChunkOneOver: "BUDGET"}  # each planted bug, and the rule it breaks
