"""A tiny llama for running vLLM on a CPU with no download: a config (dummy weights, which vLLM draws
from a fixed seed, so every engine built on it computes the same logits) and a word-level tokenizer
whose token i is the word `w<i>`, so prompts, stop strings and outputs are text.

The config is the conformance kit's (`MODEL` in `stallfree.conformance.engines.vllm_setup`, repeated
here so this module needs no vLLM: only the `tokenizers` package vLLM brings), with an end-of-sequence
token: `EOS` (w11), a token the seeded dummy model emits often, so that requests stop on it.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache

VOCAB = 1000
HEAD_SIZE = 32  # the CPU engine accepts head sizes 32, 64, 80, 96, ...
NUM_HEADS = 2
EOS = 11
MODEL = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": NUM_HEADS * HEAD_SIZE,
    "intermediate_size": 128, "num_attention_heads": NUM_HEADS, "num_key_value_heads": NUM_HEADS,
    "head_dim": HEAD_SIZE, "num_hidden_layers": 1, "vocab_size": VOCAB, "max_position_embeddings": 1 << 20,
    "torch_dtype": "float32", "rms_norm_eps": 1e-5, "eos_token_id": EOS, "bos_token_id": 0,
}


def word(token: int) -> str:
    return f"w{token}"


def text(tokens: list[int]) -> str:
    return " ".join(word(t) for t in tokens)


@cache
def model_folder() -> str:
    """A folder with the tiny model's config.json and its tokenizer (no weights: load_format="dummy")."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    folder = tempfile.mkdtemp(prefix="stallfree-tiny-")
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(MODEL, f)
    tokenizer = Tokenizer(models.WordLevel({word(i): i for i in range(VOCAB)}, unk_token=word(0)))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##")  # words joined by spaces
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": word(EOS), "bos_token": word(0),
              "unk_token": word(0), "model_max_length": 1 << 16}
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    return folder
