"""The cap model: a request's max_new as sent (its max_tokens, the cap) and its real output length
are two things, as in a server.

Each request is added with max_new = the cap (or one of a distribution of caps, drawn per request,
seeded by its rid so that a run repeats) and stops (complete(plan, stopped)) on the token at its real
length from the trace; one whose real output is longer than the cap runs to the cap. Without a cap
max_new is the real length: the oracle that knows every output length in advance. What a design does
with the cap is its own: the reservation design reserves prompt_len + cap at admission; the paged
design takes blocks as tokens are computed and reads the cap only in NEVER-FIT. The simulator
(`stallfree simulate --max-new-cap`) and the design comparison (`designs`) both use this model.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .stream import Stream
from .trace import TraceRequest


@dataclass(frozen=True, slots=True)
class CapModel:
    """One cap for every request (`cap`), or one drawn per request from `caps`; neither: the real length."""

    cap: int | None = None
    caps: tuple[int, ...] = ()

    @property
    def is_capped(self) -> bool:
        return self.cap is not None or bool(self.caps)

    def max_new(self, request: TraceRequest) -> int:
        """The max_new `request` is added with: the cap, one of the caps, or its real length."""
        if self.caps:
            return random.Random(request.rid).choice(self.caps)
        return request.max_new if self.cap is None else self.cap


def stops(stream: Stream) -> bool:
    """Whether the token `stream` emits now is its real last one, before its cap: a stop to report
    (TOKENS: a stop ends a request only on a token it emits in that step)."""
    return stream.num_emitted + 1 == stream.max_new < stream.reserved_new  # type: ignore[operator]
