"""A synthetic trace of any length, made lazily: one request decoding step after step.

Used to measure check-trace's speed and to show its memory stays flat as a trace grows."""

from __future__ import annotations

from collections.abc import Iterator


def decoding_trace(num_steps: int) -> Iterator[bytes]:
    """The JSON Lines trace of one request (prompt 4, budget 4) that decodes for `num_steps` steps."""
    yield b'{"stallfree_trace": 1, "config": {"token_budget": 4, "max_seqs": 1, "kv_tokens": 100000000}}\n'
    yield b'{"step": 0, "add": [[0, 4, %d]], "plan": [[0, 4]], "emitted": [0], "finished": []}\n' % num_steps
    for step in range(1, num_steps):
        finished = b"[0]" if step == num_steps - 1 else b"[]"
        yield b'{"step": %d, "plan": [[0, 1]], "emitted": [0], "finished": %s}\n' % (step, finished)
    yield b'{"end": true}\n'
