"""One request as the simulator follows it: where its prompt is, what of it is in KV, and when its
tokens came out."""

from __future__ import annotations

from dataclasses import dataclass, field

from .trace import TraceRequest


@dataclass(slots=True)
class Stream:
    request: TraceRequest
    reserved_new: int | None = None  # max_new as added (the request's max_tokens); None: its real length
    prompt_len: int = field(init=False)  # copied from the request: read every step
    max_new: int = field(init=False)  # the tokens it emits: its real length, at most reserved_new
    num_prefilled: int = 0  # prompt positions run (a recompute after a preemption runs them again, uncounted)
    num_emitted: int = 0
    num_computed: int = 0  # positions of this residency's prefill in KV (a preemption forgets them)
    target: int = field(init=False)  # positions this residency prefills: prompt_len, or prompt and emitted
    reservation: int = field(init=False)  # prompt_len + reserved_new: the KV the reservation design holds for it
    admitted: float | None = None  # start of the step that ran its first chunk
    first_token: float | None = None  # end of the step that emitted its first token
    last_token: float | None = None
    max_gap: float = 0.0  # the longest wait between two of its tokens
    token_times: list[float] | None = None  # every token's time, kept only when asked for

    def __post_init__(self) -> None:
        self.prompt_len = self.target = self.request.prompt_len
        self.max_new = self.request.max_new
        if self.reserved_new is None:
            self.reserved_new = self.max_new
        self.max_new = min(self.max_new, self.reserved_new)
        self.reservation = self.prompt_len + self.reserved_new

    @property
    def num_in_kv(self) -> int:
        """Positions in KV now: its prefill so far, then every prompt and emitted token but the last
        (a decode feeds in the token before the one it emits)."""
        if self.num_computed < self.target:
            return self.num_computed
        return self.prompt_len + self.num_emitted - 1

    @property
    def is_finished(self) -> bool:
        return self.num_emitted >= self.max_new

    @property
    def queueing(self) -> float | None:
        """Arrival to admission."""
        return None if self.admitted is None else self.admitted - self.request.arrival

    @property
    def ttft(self) -> float | None:
        """Arrival to first token."""
        return None if self.first_token is None else self.first_token - self.request.arrival

    @property
    def e2e(self) -> float | None:
        """Arrival to last token."""
        return None if self.last_token is None else self.last_token - self.request.arrival

    @property
    def tpot(self) -> float | None:
        """Mean time per output token after the first; None for a one-token request."""
        if self.num_emitted < 2 or self.first_token is None or self.last_token is None:
            return None
        return (self.last_token - self.first_token) / (self.num_emitted - 1)
