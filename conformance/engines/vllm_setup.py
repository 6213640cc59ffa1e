"""Building vLLM's V1 scheduler on a CPU, with no model weights: the configs, the KV cache layout, the
requests, and the sampled output of a forward pass that is not run.

Importing this module sets the environment vLLM reads at import (in-process engine core, no thread
binding, one OpenMP thread, no hub access, warnings only) unless the caller set it, checks that every
piece of vLLM's API the adapter and recorder use is there (`vllm_api`, naming what moved), imports vLLM
and builds one config, so that the lazy imports of the first build (seconds) are paid here and not by
the first call to a scheduler.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from functools import cache
from typing import Any

for _name, _value in (("VLLM_ENABLE_V1_MULTIPROCESSING", "0"), ("VLLM_CPU_OMP_THREADS_BIND", "nobind"),
                      ("OMP_NUM_THREADS", "1"), ("HF_HUB_OFFLINE", "1"), ("VLLM_LOGGING_LEVEL", "WARNING")):
    os.environ.setdefault(_name, _value)

from .vllm_api import checked_once  # noqa: E402

checked_once()  # before vLLM's classes are imported: a moved API is named here, symbol by symbol

import torch  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash  # noqa: E402
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec  # noqa: E402
from vllm.v1.outputs import ModelRunnerOutput  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

VOCAB = 1000  # the dummy model's vocabulary: prompt ids and sampled ids stay below it
HEAD_SIZE = 32  # the CPU engine accepts head sizes 32, 64, 80, 96, ...
NUM_HEADS = 2
SAMPLED_TOKEN = 1  # the token every faked forward pass samples for a request that goes on
EOS_TOKEN = 0  # the model's end of sequence: sampled for a request that stops (prompt ids stay above it)
# A small llama: enough for vLLM's config checks and for the CPU engine's dummy weights.
MODEL = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": NUM_HEADS * HEAD_SIZE,
    "intermediate_size": 128, "num_attention_heads": NUM_HEADS, "num_key_value_heads": NUM_HEADS,
    "head_dim": HEAD_SIZE, "num_hidden_layers": 1, "vocab_size": VOCAB, "max_position_embeddings": 1 << 20,
    "torch_dtype": "float32", "rms_norm_eps": 1e-5, "eos_token_id": EOS_TOKEN,
}
LAYER = "model.layers.0.self_attn.attn"


@cache
def model_folder() -> str:
    """A folder holding the small model's config.json (no weights) and a word-level tokenizer of its
    vocabulary (token i is the word `t<i>`, words joined by spaces), for the runs that detokenize."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    folder = tempfile.mkdtemp(prefix="stallfree-vllm-model-")
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(MODEL, f)
    tokenizer = Tokenizer(models.WordLevel({word(i): i for i in range(VOCAB)}, unk_token=word(SAMPLED_TOKEN)))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # words joined by single spaces
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": word(EOS_TOKEN),
                   "unk_token": word(SAMPLED_TOKEN)}, f)
    return folder


def word(token: int) -> str:
    """The text of token id `token` in the small model's tokenizer."""
    return f"t{token}"


def vllm_config(token_budget: int, max_seqs: int, max_model_len: int, block_size: int,
                prefix_caching: bool) -> VllmConfig:
    """vLLM's config for a scheduler with these limits. vLLM's own validation runs here: it refuses a
    budget below max_seqs with a pydantic ValidationError, a ValueError."""
    model = ModelConfig(model=model_folder(), skip_tokenizer_init=True, max_model_len=max_model_len, dtype="float32")
    try:
        scheduler = SchedulerConfig(
            max_model_len=max_model_len, is_encoder_decoder=False, max_num_batched_tokens=token_budget,
            max_num_seqs=max_seqs, enable_chunked_prefill=True, async_scheduling=False,
        )
    except ValidationError as error:  # vLLM's words, without pydantic's dump of every argument
        reasons = "; ".join(str(e.get("msg", e)) for e in error.errors())
        raise ValueError(f"vLLM refuses the config: {reasons}") from None
    cache_config = CacheConfig(block_size=block_size, enable_prefix_caching=prefix_caching)
    return VllmConfig(model_config=model, scheduler_config=scheduler, cache_config=cache_config,
                      device_config=DeviceConfig("cpu"))


def make_scheduler(config: VllmConfig, num_blocks: int, cls: type = Scheduler) -> Scheduler:
    """vLLM's V1 scheduler (`cls`: it or a subclass) over a pool of `num_blocks` blocks (one of them is
    the pool's shared null block: `num_blocks - 1` hold tokens)."""
    block_size = config.cache_config.block_size
    config.cache_config.num_gpu_blocks = num_blocks
    spec = FullAttentionSpec(block_size=block_size, num_kv_heads=NUM_HEADS, head_size=HEAD_SIZE, dtype=torch.float32)
    kv = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[], kv_cache_groups=[KVCacheGroupSpec([LAYER], spec)])
    return cls(config, kv, StructuredOutputManager(config), block_size, log_stats=False)


@cache
def _block_hasher(block_size: int) -> Any:
    from vllm.utils.hashing import sha256

    init_none_hash(sha256)
    return get_request_block_hasher(block_size, sha256)


def make_request(request_id: str, prompt: list[int], max_new: int, block_size: int, ignore_eos: bool = True) -> Request:
    """A request with the block hasher the engine core gives every request (without it prefix caching
    sees no hashes). Ignoring EOS it emits exactly `max_new` tokens; else it also stops on EOS_TOKEN,
    set as the engine's front end sets the model's EOS."""
    params = SamplingParams(max_tokens=max_new, ignore_eos=ignore_eos, detokenize=False)
    params.update_from_generation_config({}, EOS_TOKEN)
    return Request(request_id, prompt, params, None, block_hasher=_block_hasher(block_size))


def prompt_ids(rid: int, prompt_len: int) -> list[int]:
    """Token ids of a prompt that shares no block with another rid's (no prefix-cache hit by chance)."""
    return [(rid * 7919 + i) % (VOCAB - 2) + 2 for i in range(prompt_len)]


def faked_forward(scheduler: Scheduler, output: Any, stops: frozenset[str] | set[str] = frozenset(),
                  token: Callable[[str], int] = lambda request_id: SAMPLED_TOKEN) -> ModelRunnerOutput:
    """What the model runner would return for `output`: one sampled token for each scheduled request
    whose computed tokens now reach all its tokens (a partial prompt chunk samples none): EOS_TOKEN for
    those in `stops`, `token(request_id)` (SAMPLED_TOKEN) for the others."""
    ids = list(output.num_scheduled_tokens)
    sampled = []
    for request_id in ids:
        request = scheduler.requests[request_id]
        token_id = EOS_TOKEN if request_id in stops else token(request_id)
        sampled.append([token_id] if request.num_computed_tokens >= request.num_tokens else [])
    return ModelRunnerOutput(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)}, sampled_token_ids=sampled)


vllm_config(8, 4, 64, 16, False)  # pays the lazy imports of the first build now
