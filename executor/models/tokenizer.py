"""Text in and out: the tokenizer built from a GGUF file's vocabulary and merges with the
`tokenizers` library (byte-level BPE, as the GPT-2 family and SmolLM2 use), and the model's own
chat template (the Jinja text stored in the file) rendered for one user message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stallfree.spec import InvalidField

from .gguf_file import GGUFCheckpoint

CONTROL = 3  # GGUF token_type of a control token (<|im_start|>, <|im_end|>, ...): never split, never merged


@dataclass(frozen=True, slots=True)
class TextCodec:
    tokenizer: Any  # tokenizers.Tokenizer
    chat_template: str
    end_token: int  # the model's end of turn: generation stops when it is sampled

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=False))

    def answer(self, ids: list[int]) -> str:
        """The text of generated `ids` up to (not including) the end token, with no template marker."""
        end = ids.index(self.end_token) if self.end_token in ids else len(ids)
        return str(self.tokenizer.decode(ids[:end], skip_special_tokens=True))

    def chat(self, user: str, system: str | None = None) -> list[int]:
        """The prompt tokens of one user turn (after `system`'s message, if given; else the
        template's default), followed by the opening of the assistant's turn."""
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        template = ImmutableSandboxedEnvironment().from_string(self.chat_template)
        turns = [{"role": "system", "content": system}] if system is not None else []
        text = template.render(messages=[*turns, {"role": "user", "content": user}], add_generation_prompt=True)
        return self.encode(text)


def text_codec(checkpoint: GGUFCheckpoint) -> TextCodec:
    """Byte-level BPE from the file's `tokenizer.ggml.*` fields. SmolLM2's pre-tokenizer ('smollm')
    splits every digit apart, then applies the GPT-2 split; control tokens are added whole."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    model = checkpoint.field("tokenizer.ggml.model")
    pre = checkpoint.field("tokenizer.ggml.pre")
    if model != "gpt2" or pre not in ("smollm", "gpt2"):
        raise InvalidField(f"checkpoint {str(checkpoint.path)!r}: tokenizer {model!r}/{pre!r}; "
                           "only byte-level BPE ('gpt2' with pre 'smollm' or 'gpt2') is built here")
    tokens = checkpoint.field("tokenizer.ggml.tokens")
    types = checkpoint.field("tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ", 1)) for m in checkpoint.field("tokenizer.ggml.merges")]
    tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    digits = [pre_tokenizers.Digits(individual_digits=True)] if pre == "smollm" else []
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [*digits, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([t for t, kind in zip(tokens, types, strict=True) if kind == CONTROL])
    return TextCodec(tokenizer, checkpoint.field("tokenizer.chat_template"),
                     int(checkpoint.field("tokenizer.ggml.eos_token_id")))
