"""The default workload of `stallfree run`: several streams decode when a long prompt arrives."""

from __future__ import annotations

from stallfree.spec import Arrival, Config, Workload

NUM_STREAMS = 4
LONG_PROMPT = 400
LONG_ARRIVES_AT = 4  # step


def long_prompt_amid_decodes(token_budget: int = 64, max_seqs: int = 8, kv_tokens: int = 2048) -> Workload:
    """Four streams (prompts of 12 to 30 tokens, 24 tokens each) start at step 0; at step 4 a
    400-token prompt arrives. With budget 64 the four decodes take 4 tokens a step and the long
    prompt is prefilled 60 at a time, so no stream waits more than one step for its next token
    (DECODE-FIRST)."""
    streams = tuple(Arrival(rid, 12 + 6 * rid, 24, 0) for rid in range(NUM_STREAMS))
    long = Arrival(NUM_STREAMS, LONG_PROMPT, 8, LONG_ARRIVES_AT)
    return Workload(Config(token_budget, max_seqs, kv_tokens), (*streams, long))
