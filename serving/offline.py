"""A whole vLLM engine on the CPU, in process, driven step by step: requests arrive before the engine
step their arrival names and clients abort at exact steps, so the same workload runs the same way
through vLLM's own scheduler and through stallfree's. Used by the vLLM tests and the benchmark.

The environment vLLM reads at import is set here unless the caller set it: the engine core in
process (so a `scheduler_cls` class object works and arrivals are in lockstep), no thread binding,
one OpenMP thread, no hub access.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

for _name, _value in (("VLLM_ENABLE_V1_MULTIPROCESSING", "0"), ("VLLM_CPU_OMP_THREADS_BIND", "nobind"),
                      ("OMP_NUM_THREADS", "1"), ("HF_HUB_OFFLINE", "1"), ("VLLM_LOGGING_LEVEL", "WARNING")):
    os.environ.setdefault(_name, _value)

BLOCK_SIZE = 32  # the CPU engine takes block sizes that are multiples of 32
KV_BYTES = 64 << 20  # a fixed size: else the CPU worker asks for most of the memory


@dataclass(frozen=True, slots=True)
class Arrival:
    """One request: its prompt text, vLLM's sampling params, the step it arrives before, and the step
    before which its client aborts it (None: never)."""

    prompt: str
    params: Any
    arrival_step: int = 0
    abort_step: int | None = None


@dataclass(slots=True)
class Run:
    """What a run gave: each request's output (by index), and the wall time of each engine step."""

    outputs: dict[int, Any] = field(default_factory=dict)
    step_seconds: list[float] = field(default_factory=list)
    first_token_at: dict[int, float] = field(default_factory=dict)  # seconds from its arrival
    token_times: dict[int, list[float]] = field(default_factory=dict)
    scheduler: Any = None


def build(scheduler_cls: Any = None, *, num_blocks: int, max_model_len: int, budget: int, max_seqs: int,
          model: str | None = None, **extra: Any) -> Any:
    """An LLMEngine over the tiny model (dummy weights), or `model` (a folder, with its weights), with
    `scheduler_cls` (None: vLLM's own)."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm.v1.engine.llm_engine import LLMEngine

    from .tiny import model_folder

    if scheduler_cls is not None:
        extra["scheduler_cls"] = scheduler_cls
    extra.setdefault("enable_prefix_caching", False)
    extra.setdefault("load_format", "dummy" if model is None else "auto")  # a model folder of its own: its weights
    return LLMEngine.from_engine_args(EngineArgs(
        model=model or model_folder(), dtype="float32", enforce_eager=True,
        block_size=BLOCK_SIZE, max_model_len=max_model_len, num_gpu_blocks_override=num_blocks,
        max_num_seqs=max_seqs, max_num_batched_tokens=budget, enable_chunked_prefill=True,
        async_scheduling=False, kv_cache_memory_bytes=KV_BYTES, **extra))


def drive(engine: Any, arrivals: Sequence[Arrival], max_steps: int = 10_000) -> Run:
    """Run `arrivals` through `engine` to the end. An idle engine takes no step: a later arrival then
    comes at the next one."""
    run = Run(scheduler=engine.engine_core.engine_core.scheduler)
    order = sorted(range(len(arrivals)), key=lambda i: arrivals[i].arrival_step)
    arrived: dict[int, float] = {}
    step = 0
    while (order or engine.has_unfinished_requests()) and step < max_steps:
        while order and (arrivals[order[0]].arrival_step <= step or not engine.has_unfinished_requests()):
            i = order.pop(0)
            engine.add_request(str(i), arrivals[i].prompt, arrivals[i].params)
            arrived[i] = time.perf_counter()
        withdrawn = [str(i) for i, a in enumerate(arrivals) if a.abort_step == step and i in arrived]
        if withdrawn:
            engine.abort_request(withdrawn, internal=False)
        start = time.perf_counter()
        outputs = engine.step()
        now = time.perf_counter()
        run.step_seconds.append(now - start)
        for o in outputs:
            i = int(o.request_id)
            if o.outputs and o.outputs[0].token_ids:
                run.first_token_at.setdefault(i, now - arrived[i])
                run.token_times.setdefault(i, []).append(now)
            if o.finished:
                run.outputs[i] = o
        step += 1
    for i in arrived:  # an abort before the request emitted anything leaves no finished output
        run.outputs.setdefault(i, None)
    return run
