"""Milliseconds for each recorded step, from the roofline cost model (`stallfree.costs`), priced
the way the simulator prices a step: every token through the weights, a chunk's causal attention
over the positions before it and its own, a decode over the prompt and the tokens so far."""

from __future__ import annotations

from stallfree.costs import Roofline, StepLoad

from .record import DECODE, StepView

MS = 1e3


def load(step: StepView) -> StepLoad:
    pairs = kv_read = 0
    for e in step.entries:
        if e.kind == DECODE:
            pairs += e.context
            kv_read += e.context - 1
        else:
            start = e.start or 0
            pairs += StepLoad.chunk_pairs(start, e.n)
            kv_read += start
    return StepLoad(step.num_tokens, pairs, kv_read)


def step_ms(roofline: Roofline, step: StepView) -> float:
    return roofline.step_seconds(load(step)) * MS
