"""Workloads whose prompts share prefixes, for the prefix-caching design: a `Trace` (lengths and
arrival times, as the simulator reads them) and each request's `content` (`stallfree.prefix.contract.
keys`: which leading tokens it shares with whom). The Azure traces carry lengths only, so the sharing
is modelled, with every parameter stated and its default's source given (docs/prefix.md).

- `system_prompts`: each request starts with one of `num_groups` system prompts of `system_len`
  tokens, then a user message of its own.
- `conversations`: multi-turn chats: each turn's prompt is the previous turn's prompt, the previous
  answer, and a new message; the next turn arrives `think_seconds` after the previous one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .trace import Trace, TraceRequest

Contents = dict[int, tuple[tuple[int, int], ...]]


@dataclass(frozen=True, slots=True)
class SystemPrompts:
    num_requests: int = 2000
    rate: float = 8.0  # arrivals per second, Poisson (assumed)
    num_groups: int = 8  # distinct system prompts (assumed: a few applications on one deployment)
    system_len: int = 1024  # tokens of each (assumed)
    user_mean: int = 256  # mean user message, exponential (assumed)
    output_mean: int = 211  # mean output, exponential: the Azure 2023 conv trace's mean output
    seed: int = 0


@dataclass(frozen=True, slots=True)
class Conversations:
    num_conversations: int = 300
    turns: int = 5  # turns per conversation (assumed)
    rate: float = 1.0  # conversations started per second, Poisson (assumed)
    think_seconds: float = 20.0  # from one turn's arrival to the next one's (assumed)
    system_len: int = 256  # one system prompt shared by every conversation (assumed)
    message_mean: int = 128  # mean new message per turn, exponential (assumed)
    output_mean: int = 211  # mean answer, exponential: the Azure 2023 conv trace's mean output
    seed: int = 0


def _length(rng: random.Random, mean: int) -> int:
    return max(1, int(rng.expovariate(1 / mean)))


def system_prompts(p: SystemPrompts = SystemPrompts()) -> tuple[Trace, Contents]:
    """Requests sharing one of `p.num_groups` system prompts (content ids 0..num_groups-1)."""
    rng = random.Random(p.seed)
    clock, requests, contents = 0.0, [], {}
    for rid in range(p.num_requests):
        clock += rng.expovariate(p.rate)
        user = _length(rng, p.user_mean)
        requests.append(TraceRequest(rid, clock, p.system_len + user, _length(rng, p.output_mean)))
        contents[rid] = ((rng.randrange(p.num_groups), p.system_len),)
    return Trace(f"system-prompts x{p.num_groups}", tuple(requests)), contents


def conversations(p: Conversations = Conversations()) -> tuple[Trace, Contents]:
    """Multi-turn chats. Content ids: 0 the system prompt; then two per turn of each conversation, its
    message and its answer. A turn's prompt holds the whole conversation so far as content."""
    rng = random.Random(p.seed)
    start, turns = 0.0, []
    next_id = 1
    for _ in range(p.num_conversations):
        start += rng.expovariate(p.rate)
        history: list[tuple[int, int]] = [(0, p.system_len)]
        for turn in range(p.turns):
            message = (next_id, _length(rng, p.message_mean))
            answer_len = _length(rng, p.output_mean)
            prompt = (*history, message)
            turns.append((start + turn * p.think_seconds, prompt, answer_len))
            history = [*prompt, (next_id + 1, answer_len)]  # the answer's tokens, as the next prompt holds them
            next_id += 2
    turns.sort(key=lambda t: t[0])
    requests, contents = [], {}
    for rid, (arrival, prompt, answer_len) in enumerate(turns):
        requests.append(TraceRequest(rid, arrival, sum(n for _, n in prompt), answer_len))
        contents[rid] = prompt
    return Trace(f"conversations x{p.turns}", tuple(requests)), contents
