"""Every piece of vLLM's API that the adapter (`vllm_adapter`, `vllm_setup`) and the recorder
(`vllm_recorder`) rely on, checked in one place before either builds anything.

The adapter and recorder drive vLLM's scheduler through private, unversioned API (written against
vLLM 0.32.0). When vLLM moves a class, renames a field or a parameter, `check_vllm_api()` raises
`VllmApiMoved` naming each symbol that is gone, instead of an AttributeError deep in a run or,
worse, a scheduler that runs on without what the adapter meant to drive. It imports no vLLM module
at import time: `import_module` is a parameter, so a test can hand it fake modules.

Each entry of `SYMBOLS` is `MODULE:QUALNAME` with, after `(`, the parameter names a callable must
accept: `vllm.v1.core.sched.scheduler:Scheduler.update_from_output(scheduler_output,
model_runner_output)`. A dotted name resolves through attributes, a class's fields (dataclass,
msgspec struct) and its annotations, so that instance fields declared on the class count.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Iterable
from functools import cache
from types import ModuleType
from typing import Any

WRITTEN_AGAINST = "0.32.0"
SCHEDULER = "vllm.v1.core.sched.scheduler:Scheduler"
SYMBOLS: tuple[str, ...] = (
    # the scheduler, built and driven by the adapter, subclassed by the recorder
    f"{SCHEDULER}.__init__(vllm_config, kv_cache_config, structured_output_manager, block_size, log_stats)",
    f"{SCHEDULER}.schedule()",
    f"{SCHEDULER}.update_from_output(scheduler_output, model_runner_output)",
    f"{SCHEDULER}.add_request(request)",
    f"{SCHEDULER}.finish_requests(request_ids, finished_status)",
    # the paged adapter (vllm_paged): where vLLM preempts, its pool, an abort, EOS (its queues and
    # kv_cache_manager are instance fields set in __init__: a run names them if they move)
    f"{SCHEDULER}._preempt_request(request, timestamp)",
    "vllm.v1.core.block_pool:BlockPool.get_num_free_blocks()",
    # what the planted faults (vllm_faults) override
    f"{SCHEDULER}._free_request_blocks(request)",
    f"{SCHEDULER}._get_local_prefix_cache_hit(request)",
    "vllm.v1.request:RequestStatus.FINISHED_ABORTED",
    "vllm.sampling_params:SamplingParams.update_from_generation_config(generation_config, eos_token_id)",
    # what schedule() returns, read by both
    "vllm.v1.core.sched.output:SchedulerOutput.num_scheduled_tokens",
    "vllm.v1.core.sched.output:SchedulerOutput.preempted_req_ids",
    "vllm.v1.core.sched.output:SchedulerOutput.scheduled_new_reqs",
    "vllm.v1.core.sched.output:SchedulerOutput.scheduled_cached_reqs",
    "vllm.v1.core.sched.output:NewRequestData.req_id",
    "vllm.v1.core.sched.output:NewRequestData.num_computed_tokens",
    "vllm.v1.core.sched.output:CachedRequestData.req_ids",
    "vllm.v1.core.sched.output:CachedRequestData.resumed_req_ids",
    "vllm.v1.core.sched.output:CachedRequestData.num_computed_tokens",
    # what update_from_output() returns, read by both
    "vllm.v1.engine:EngineCoreOutputs.outputs",
    "vllm.v1.engine:EngineCoreOutput.request_id",
    "vllm.v1.engine:EngineCoreOutput.new_token_ids",
    "vllm.v1.engine:EngineCoreOutput.finish_reason",
    "vllm.v1.engine:FinishReason.LENGTH",
    "vllm.v1.engine:FinishReason.STOP",
    "vllm.v1.engine:FinishReason.ABORT",
    # the configs, the KV layout, the requests and the faked forward pass (vllm_setup)
    "vllm.config:ModelConfig(model, skip_tokenizer_init, max_model_len, dtype)",
    "vllm.config:SchedulerConfig(max_model_len, is_encoder_decoder, max_num_batched_tokens, max_num_seqs, "
    "enable_chunked_prefill, async_scheduling)",
    "vllm.config:CacheConfig(block_size, enable_prefix_caching)",
    "vllm.config:CacheConfig.num_gpu_blocks",
    "vllm.config:VllmConfig(model_config, scheduler_config, cache_config, device_config)",
    "vllm.config:DeviceConfig",
    "vllm.sampling_params:SamplingParams",
    "vllm.v1.core.kv_cache_utils:get_request_block_hasher",
    "vllm.v1.core.kv_cache_utils:init_none_hash",
    "vllm.utils.hashing:sha256",
    "vllm.v1.kv_cache_interface:FullAttentionSpec(block_size, num_kv_heads, head_size, dtype)",
    "vllm.v1.kv_cache_interface:KVCacheConfig(num_blocks, kv_cache_tensors, kv_cache_groups)",
    "vllm.v1.kv_cache_interface:KVCacheGroupSpec",
    "vllm.v1.outputs:ModelRunnerOutput(req_ids, req_id_to_index, sampled_token_ids)",
    "vllm.v1.request:Request.__init__(request_id, prompt_token_ids, sampling_params, pooling_params, block_hasher)",
    "vllm.v1.structured_output:StructuredOutputManager",
    # the whole engine the recorder runs
    "vllm.engine.arg_utils:EngineArgs(model, load_format, skip_tokenizer_init, dtype, enforce_eager, block_size, "
    "max_model_len, num_gpu_blocks_override, max_num_seqs, max_num_batched_tokens, enable_chunked_prefill, "
    "enable_prefix_caching, scheduler_cls, async_scheduling, kv_cache_memory_bytes)",
    "vllm.v1.engine.llm_engine:LLMEngine.from_engine_args",
    "vllm.v1.engine.llm_engine:LLMEngine.add_request(request_id, prompt, params)",
    "vllm.v1.engine.llm_engine:LLMEngine.abort_request(request_ids, internal)",
    "vllm.v1.engine.llm_engine:LLMEngine.step()",
    "vllm.v1.engine.llm_engine:LLMEngine.has_unfinished_requests()",
    "vllm.inputs:TokensPrompt",
)


class VllmApiMoved(RuntimeError):
    """A symbol of vLLM's API that the adapter or the recorder relies on is gone or changed."""


def check_vllm_api(
    import_module: Callable[[str], ModuleType] = importlib.import_module, symbols: Iterable[str] = SYMBOLS,
) -> None:
    """Raise VllmApiMoved naming every entry of `symbols` that vLLM no longer has; return if all are there."""
    missing = [why for why in (problem(entry, import_module) for entry in symbols) if why]
    if missing:
        version = _version(import_module)
        raise VllmApiMoved(f"vLLM {version}'s API has moved from what stallfree's vLLM adapter and recorder use "
                           f"(written against vLLM {WRITTEN_AGAINST}): " + "; ".join(missing))


@cache
def checked_once() -> None:
    """check_vllm_api() on the installed vLLM, once a process (the adapter and the recorder call this)."""
    check_vllm_api()


def problem(entry: str, import_module: Callable[[str], ModuleType]) -> str | None:
    """What is wrong with `entry` (`MODULE:QUALNAME[(params)]`), or None."""
    path, _, params = entry.partition("(")
    module_name, _, qualname = path.partition(":")
    symbol = f"{module_name}.{qualname}"
    try:
        obj: Any = import_module(module_name)
    except ImportError as error:
        return f"{symbol} is missing: module {module_name} cannot be imported ({error})"
    for part in qualname.split("."):
        if hasattr(obj, part) and not _only_objects(obj, part):
            obj = getattr(obj, part)
        elif part in _fields(obj):
            obj = None  # a declared field: it has no value on the class, only its name is checked
        else:
            return f"{symbol} is missing: {getattr(obj, '__name__', repr(obj))} has no {part!r}"
    wanted = [p.strip() for p in params.rstrip(")").split(",") if p.strip()]
    if not params:
        return None
    if not callable(obj):
        return f"{symbol} is not callable"
    try:
        accepted = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return None  # a builtin without a signature: callable is all that can be checked
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    absent = [p for p in wanted if p not in accepted and not takes_any]
    if absent:
        return f"{symbol} takes no parameter {', '.join(map(repr, absent))} (it takes {', '.join(accepted)})"
    return None


def _only_objects(cls: Any, name: str) -> bool:
    """Whether class `cls` has `name` only from `object` (an `__init__` it no longer defines)."""
    return isinstance(cls, type) and all(name not in vars(k) for k in cls.__mro__ if k is not object)


def _fields(cls: Any) -> set[str]:
    """Names a class declares for its instances: dataclass fields, msgspec struct fields, annotations."""
    if not isinstance(cls, type):
        return set()
    names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    names.update(getattr(cls, "__struct_fields__", ()))
    for klass in cls.__mro__:
        names.update(getattr(klass, "__annotations__", {}))
    return names


def _version(import_module: Callable[[str], ModuleType]) -> str:
    try:
        return str(getattr(import_module("vllm"), "__version__", "(unknown version)"))
    except ImportError:
        return "(not importable)"
