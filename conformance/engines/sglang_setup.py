"""What SGLang's scheduling policy needs before it can be imported and built on a CPU, without a model:
every call into SGLang's private API that the SGLang adapter (`sglang_adapter`) makes is here or
there, written against sglang 0.5.23 (`scripts/sglang-venv.sh` pins it).

- torchvision: SGLang's policy import chain reaches a vision-model config that imports torchvision
  unconditionally; the served torchvision is a CUDA build that fails to load beside the CPU torch.
  An import hook stands in for it (an `InterpolationMode` enum and inert placeholders: nothing on the
  policy path calls them). transformers is asked first, so that it caches "torchvision absent".
- SGLang's process-wide config is published once, from `ServerArgs(model_path="dummy", device="cpu")`.
- The pools are SGLang's own CPU ones: a request-row pool of max_seqs rows, a KV pool of K tokens
  (page size 1), the token allocator over it, and the radix cache over both.
- SGLang's abort code lives on its `Scheduler` (`sglang_aborts`, for the adapter with stops and cancels,
  `sglang_ends`): importing that module costs about 17 s more and four more packages, so only that
  adapter pays it.
"""

from __future__ import annotations

import enum
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from array import array
from functools import cache
from typing import Any

WRITTEN_AGAINST = "0.5.23"
VOCAB = 100_000
SAMPLED_TOKEN = 1  # what the faked forward pass samples for a request that goes on: never its EOS
EOS_TOKEN = 0  # each request's end-of-sequence token, sampled only for a request the caller stops


class _Inert:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass


class _Interpolation(enum.Enum):
    NEAREST = 0
    NEAREST_EXACT = 1
    BILINEAR = 2
    BICUBIC = 3
    BOX = 4
    HAMMING = 5
    LANCZOS = 6


class _StandIn(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Interpolation if name == "InterpolationMode" else _Inert


class _TorchvisionFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name.split(".")[0] == "torchvision":
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _StandIn(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []


@cache
def sglang() -> types.SimpleNamespace:
    """SGLang's policy modules, imported once a process (about 6 s), with its config published."""
    if importlib.util.find_spec("torchvision") is None:
        from transformers.utils import import_utils
        import_utils.is_torchvision_available()  # cached "absent" before the stand-in appears
        sys.meta_path.insert(0, _TorchvisionFinder())
    with warnings.catch_warnings():  # "Only CUDA ... support AWQ/GGUF": no kernel is used here
        warnings.simplefilter("ignore", UserWarning)
        return _imported()


# Every name of SGLang's private API the adapter uses (MODULE:NAME), imported in this order.
SYMBOLS: tuple[str, ...] = (
    "torch:torch",
    "sglang.srt.managers.schedule_batch:Req",
    "sglang.srt.managers.schedule_batch:ScheduleBatch",
    "sglang.srt.managers.schedule_policy:AddReqResult",
    "sglang.srt.managers.schedule_policy:PrefillAdder",
    "sglang.srt.managers.schedule_policy:SchedulePolicy",
    "sglang.srt.managers.scheduler_components.new_token_ratio_tracker:NewTokenRatioTracker",
    "sglang.srt.mem_cache.allocator:TokenToKVPoolAllocator",
    "sglang.srt.mem_cache.cache_init_params:CacheInitParams",
    "sglang.srt.mem_cache.common:checkpoint_kv_cache",
    "sglang.srt.mem_cache.common:release_kv_cache",
    "sglang.srt.mem_cache.memory_pool:MHATokenToKVPool",
    "sglang.srt.mem_cache.memory_pool:ReqToTokenPool",
    "sglang.srt.mem_cache.radix_cache:RadixCache",
    "sglang.srt.runtime_context:publish",
    "sglang.srt.runtime_context:reset_context",
    "sglang.srt.sampling.sampling_params:SamplingParams",
    "sglang.srt.server_args:ServerArgs",
    "sglang.srt.speculative.spec_info:SpeculativeAlgorithm",
)


# The names of SGLang's Scheduler module the adapter with stops and cancels uses, imported on first use.
ABORT_SYMBOLS: tuple[str, ...] = (
    "sglang.srt.managers.scheduler:Scheduler",
    "sglang.srt.managers.io_struct:AbortReq",
    "sglang.srt.managers.schedule_batch:FINISH_ABORT",
    "sglang.srt.disaggregation.utils:DisaggregationMode",
)


@cache
def sglang_aborts() -> types.SimpleNamespace:
    """SGLang's Scheduler, whose abort methods the adapter with cancels runs, and the types they take."""
    sglang()
    with warnings.catch_warnings():  # "Triton is not supported on current platform": no kernel runs
        warnings.simplefilter("ignore", UserWarning)
        return types.SimpleNamespace(**_names(ABORT_SYMBOLS))


def _imported() -> types.SimpleNamespace:
    s = types.SimpleNamespace(**_names(SYMBOLS))
    s.reset_context()
    s.publish(s.ServerArgs(model_path="dummy", device="cpu"), role="scheduler")
    return s


def _names(symbols: tuple[str, ...]) -> dict[str, Any]:
    names: dict[str, Any] = {}
    for entry in symbols:
        module_name, _, name = entry.partition(":")
        module = importlib.import_module(module_name)
        if name == module_name:
            names[name] = module
        elif hasattr(module, name):
            names[name] = getattr(module, name)
        else:
            raise ImportError(f"sglang {WRITTEN_AGAINST}'s {module_name}.{name} is gone from the installed sglang: "
                              "the SGLang adapter is written against the pinned version (scripts/sglang-venv.sh)")
    return names


def make_pools(max_seqs: int, kv_tokens: int, max_context: int, tree_class: type | None = None,
               radix: bool = True) -> tuple[Any, Any, Any]:
    """SGLang's request-row pool (max_seqs rows), token allocator (K tokens, page 1) and radix cache (or
    `tree_class`, a subclass of it); without `radix`, the cache disabled (SGLang's --disable-radix-cache)."""
    s = sglang()
    rows = s.ReqToTokenPool(size=max_seqs, max_context_len=max_context, device="cpu", enable_memory_saver=False)
    kv = s.MHATokenToKVPool(size=kv_tokens, page_size=1, dtype=s.torch.float16, head_num=1, head_dim=8,
                            layer_num=1, device="cpu", enable_memory_saver=False)
    allocator = s.TokenToKVPoolAllocator(kv_tokens, dtype=s.torch.float16, device="cpu", kvcache=kv,
                                         need_sort=False)
    tree = (tree_class or s.RadixCache)(s.CacheInitParams(disable=not radix, req_to_token_pool=rows,
                                          token_to_kv_pool_allocator=allocator, page_size=1))
    return rows, allocator, tree


def rid_text(rid: int) -> str:
    """SGLang's request id for `rid`: zero-padded to 20 digits, since SGLang's abort takes every request
    whose id starts with the one it is given (a request's parallel samples share a prefix), and "1"
    would also take "10"."""
    return f"{rid:020d}"


def own_token(rid: int, i: int) -> int:
    """Token `i` of request `rid`'s own made-up prompt: no other request's (no radix hit by chance)."""
    return 2 + (rid << 24) + i


def make_req(rid: int, prompt_len: int, max_new: int, req_class: type | None = None,
             ids: array | None = None) -> Any:
    """SGLang's Req (or `req_class`, a subclass) for a made-up prompt, by default all its rid's own tokens
    (else `ids`), sampling up to max_new tokens, ended early by EOS_TOKEN."""
    s = sglang()
    params = s.SamplingParams(max_new_tokens=max_new, temperature=0.0)
    params.normalize(None)
    ids = ids if ids is not None else array("q", (own_token(rid, i) for i in range(prompt_len)))
    return (req_class or s.Req)(rid=rid_text(rid), origin_input_text="", origin_input_ids=ids,
                                sampling_params=params, vocab_size=VOCAB, eos_token_ids={EOS_TOKEN})


def model_config() -> types.SimpleNamespace:
    """The two fields of a model config that ScheduleBatch.init_new reads."""
    return types.SimpleNamespace(vocab_size=VOCAB, is_encoder_decoder=False)
