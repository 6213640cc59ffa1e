"""The contract's own example workload: the hand trace, checked step by step in
tests/test_contract_hand_trace.py, drawn on docs/learn.md and judged first by the exercises."""

from __future__ import annotations

from .types import Config
from .workload import Arrival, Workload

# Budget 8, one request decoding (r0: 8 prompt tokens, 6 to emit), a 20-token prompt arrives before step 1.
HAND_TRACE = Workload(
    Config(token_budget=8, max_seqs=4, kv_tokens=64),
    (Arrival(0, 8, 6, 0), Arrival(1, 20, 3, 1)),
)
