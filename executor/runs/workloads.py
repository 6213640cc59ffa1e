"""Workloads the executor runs: the default one of `stallfree run` (several streams decode when a long
prompt arrives), and the one-prompt-a-step workload of the step-time benchmarks."""

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


def one_prompt_per_step(tokens: int, reps: int) -> Workload:
    """reps + 1 requests of `tokens` prompt tokens and one output token, budget `tokens`, KV for one
    request at a time: each step runs one whole prompt (what the step-time benchmarks time)."""
    requests = tuple(Arrival(rid, tokens, 1, 0) for rid in range(reps + 1))
    return Workload(Config(tokens, 1, tokens + 1), requests)


def preempting(token_budget: int = 64, max_seqs: int = 8, kv_tokens: int = 96) -> Workload:
    """For the paged design (blocks of 16, so 6 blocks): three streams with 20-token prompts and 24
    tokens each start at step 0 and take 2 blocks each; at position 32 every stream needs a third
    block and none is free, so the newest (rid 2) is preempted at step 13 after emitting 13 tokens,
    waits, and is recomputed at step 24 (its prompt and those 13 tokens: a 33-token chunk) ahead of
    rid 3, which arrived after it. docs/examples/preempting.json is this workload."""
    streams = tuple(Arrival(rid, 20, 24, 0) for rid in range(3))
    return Workload(Config(token_budget, max_seqs, kv_tokens), (*streams, Arrival(3, 8, 8, 2)))
