"""The timeline scenario: one long prompt arrives while many streams decode.

64 streams start together and are decoding when a 32,768-token prompt arrives (the contract's
example). Run under each policy with every step and token time kept, it shows what the policy does
to the streams while the prompt is prefilled.
"""

from __future__ import annotations

from dataclasses import dataclass

from stallfree.costs import Roofline
from stallfree.spec import Config

from .policies import factory
from .simulator import SimResult, simulate
from .trace import Trace, TraceRequest

NUM_STREAMS = 64
STREAM_PROMPT_LEN = 512
STREAM_MAX_NEW = 1_000  # enough tokens to keep decoding past the long prompt's first token
LONG_PROMPT_LEN = 32_768
LONG_MAX_NEW = 16
LONG_ARRIVAL = 1.0  # seconds: the streams are all decoding by then
MAX_SEQS = NUM_STREAMS + 1


@dataclass(frozen=True, slots=True)
class Timeline:
    policy: str
    result: SimResult
    long_rid: int

    @property
    def arrival(self) -> float:
        return LONG_ARRIVAL

    @property
    def first_token(self) -> float:
        stream = next(s for s in self.result.streams if s.request.rid == self.long_rid)
        assert stream.first_token is not None
        return stream.first_token

    @property
    def worst_gap(self) -> float:
        """The longest wait between two tokens of any stream but the long prompt's (seconds)."""
        return max(s.max_gap for s in self.result.streams if s.request.rid != self.long_rid)


def scenario() -> Trace:
    streams = [TraceRequest(rid, 0.0, STREAM_PROMPT_LEN, STREAM_MAX_NEW) for rid in range(NUM_STREAMS)]
    long = TraceRequest(NUM_STREAMS, LONG_ARRIVAL, LONG_PROMPT_LEN, LONG_MAX_NEW)
    return Trace("long prompt amid decodes", (*streams, long))


def run(policy: str, roofline: Roofline, budget: int) -> Timeline:
    trace = scenario()
    reservations = sum(r.prompt_len + r.max_new for r in trace.requests)
    config = Config(budget, MAX_SEQS, reservations)
    result = simulate(trace, factory(policy), config, roofline, policy, record=True)
    return Timeline(policy, result, NUM_STREAMS)
