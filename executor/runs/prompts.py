"""Real prompts for a real model: the shipped prompt set, and the workload that plays prompts as
chat turns arriving over time, so that later ones are prefilled (in chunks) while earlier ones decode."""

from __future__ import annotations

from dataclasses import dataclass

from stallfree.spec import Arrival, Config, InvalidField, Workload

from ..models.tokenizer import TextCodec

PROMPTS = (
    "What is the capital of France?",
    "Name three primary colors.",
    "Write one sentence about the ocean.",
    "What is 12 plus 7?",
    "Give a short tip for learning to cook.",
)
ARRIVAL_GAP = 4  # steps between arrivals after the first pair: each arrives while others decode


@dataclass(frozen=True, slots=True)
class ChatRequests:
    workload: Workload
    prompts: tuple[tuple[int, tuple[int, ...]], ...]  # (rid, token ids of the templated turn)
    texts: tuple[str, ...]  # the user's text, by rid


def chat_requests(codec: TextCodec, texts: tuple[str, ...], max_new: int, config: Config,
                  gap: int = ARRIVAL_GAP) -> ChatRequests:
    """Request i is `texts[i]` as a chat turn: the first two arrive at step 0, each later one `gap`
    steps after the one before."""
    if not texts:
        raise InvalidField("prompts: at least one is needed")
    if any(not t.strip() for t in texts):
        raise InvalidField(f"prompt {next(t for t in texts if not t.strip())!r}: is empty")
    prompts = tuple((rid, tuple(codec.chat(t))) for rid, t in enumerate(texts))
    arrivals = tuple(Arrival(rid, len(tokens), max_new, max(0, rid - 1) * gap) for rid, tokens in prompts)
    return ChatRequests(Workload(config, arrivals), prompts, texts)
