"""The floor chain: from a token budget to a step's time, and to the first token of a long prompt
that arrives while decodes run.

Under the contract's policy every running stream gets its token first, so a prompt is prefilled in
chunks of `budget - num_decodes` tokens, one chunk a step, and its first token comes out of the step
that runs its last chunk. Each of those steps also carries one token of every running stream: the
streams see one step's time between tokens, whatever the prompt's length.
"""

from __future__ import annotations

from dataclasses import dataclass

from .load import StepLoad
from .roofline import Roofline


@dataclass(frozen=True, slots=True)
class FirstToken:
    """How a `prompt_len`-token prompt reaches its first token at `budget` beside `num_decodes` streams."""

    budget: int
    prompt_len: int
    num_decodes: int
    num_steps: int  # steps from admission to the first token, that step included
    seconds: float  # their total time: the prompt's time to first token once admitted
    worst_step_seconds: float  # the longest of them: the worst gap a running stream sees meanwhile


def full_step(roofline: Roofline, budget: int) -> float:
    """Seconds of a step that fills `budget` with the first positions of a prompt."""
    return roofline.step_seconds(StepLoad(budget, StepLoad.chunk_pairs(0, budget), 0))


def worst_step(roofline: Roofline, budget: int, max_context: int, kv_tokens: int) -> float:
    """The longest a step can take at `budget`, whatever the traffic: the bound on the gap between
    two tokens of a running stream under the contract's policy, where every stream decodes every step
    (DECODE-FIRST with READY-WITHIN-BUDGET).

    A step carries at most `budget` tokens; each attends to at most `max_context` positions (the
    largest reservation, prompt_len + max_new); the KV it reads back is at most all `kv_tokens`
    reserved. In floor mode only the first term counts: max(budget x 2 x params / peak, weight read)."""
    load = StepLoad(budget, budget * max_context, kv_tokens)
    return roofline.step_seconds(load)


def first_token(
    roofline: Roofline, budget: int, prompt_len: int, num_decodes: int, decode_context: int = 1
) -> FirstToken:
    """Walk the steps of the chain. Decodes start at `decode_context` cached positions and each
    step adds one; only `full` mode prices the context."""
    for name, value, minimum in (("budget", budget, 1), ("prompt_len", prompt_len, 1),
                                 ("num_decodes", num_decodes, 0), ("decode_context", decode_context, 1)):
        if type(value) is not int or value < minimum:
            raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    chunk = budget - num_decodes
    if chunk < 1:
        raise ValueError(
            f"num_decodes {num_decodes} fills budget {budget}: decodes go first, so no prompt token ever runs"
        )
    done = steps = 0
    total = worst = 0.0
    context = decode_context
    while done < prompt_len:
        n = min(chunk, prompt_len - done)
        load = StepLoad(
            num_tokens=num_decodes + n,
            attention_pairs=num_decodes * context + StepLoad.chunk_pairs(done, n),
            kv_read_tokens=num_decodes * (context - 1) + done,
        )
        seconds = roofline.step_seconds(load)
        total += seconds
        worst = max(worst, seconds)
        done += n
        steps += 1
        context += 1
    return FirstToken(budget, prompt_len, num_decodes, steps, total, worst)
