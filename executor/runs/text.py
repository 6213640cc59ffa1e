"""Printing real text as it is generated: each step's new tokens as text, per request, and each
request's whole answer up to the model's end token."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.executor import StepRecord
from ..models.tokenizer import TextCodec


def end_index(outputs: list[int], end_token: int) -> int | None:
    """The index of the first end token among a request's outputs (None: never sampled)."""
    return outputs.index(end_token) if end_token in outputs else None


@dataclass(slots=True)
class TextStream:
    """Decodes each request's tokens as they arrive; a piece is the new text since the last one
    (byte-level BPE can split a character over tokens: text is decoded whole, then diffed)."""

    codec: TextCodec
    outputs: dict[int, list[int]] = field(default_factory=dict)
    text: dict[int, str] = field(default_factory=dict)
    ended: set[int] = field(default_factory=set)

    def line(self, record: StepRecord) -> str | None:
        """One line for a step that emitted text: `step 7  r0 ' Paris' r2 '.'`; None otherwise."""
        pieces = []
        for rid, token in sorted(record.tokens.items()):
            if rid in self.ended:
                continue
            if token == self.codec.end_token:
                self.ended.add(rid)
                pieces.append(f"r{rid} [end]")
                continue
            tokens = self.outputs.setdefault(rid, [])
            tokens.append(token)
            text = self.codec.decode(tokens)
            piece, self.text[rid] = text[len(self.text.get(rid, "")):], text
            pieces.append(f"r{rid} {piece!r}")
        return f"step {record.step:>3}  " + " ".join(pieces) if pieces else None


def answers(codec: TextCodec, texts: tuple[str, ...], outputs: dict[int, list[int]], max_new: int,
            reasons: dict[int, str] | None = None) -> list[str]:
    """Each request's prompt and its answer up to (not including) the end token; `reasons`: how each
    request ended (length, stop, cancel)."""
    lines = []
    for rid, tokens in sorted(outputs.items()):
        end = end_index(tokens, codec.end_token)
        answer = codec.decode(tokens if end is None else tokens[:end])
        reason = (reasons or {}).get(rid, "length")
        how = (f"end token at output {end}" if end is not None else
               f"cancelled after {len(tokens)} tokens" if reason == "cancel" else f"no end token in {max_new} tokens")
        how += "; stopped there" if reason == "stop" else ""
        lines.append(f"r{rid} > {texts[rid]}\n   {answer!r}  ({how})")
    return lines
