"""Recording a whole vLLM engine run as a trace v2, for `stallfree check-trace`.

`TraceRecorder` is a subclass of vLLM's V1 scheduler, passed to the engine as its `scheduler_cls`. It
changes nothing vLLM decides: it writes, for each `schedule()` and the `update_from_output()` after
it, one step line with the facts the engine had (its requests' ids, as strings, are vLLM's):

- `add`: the requests the engine handed the scheduler since the last step (`add_request`);
- `preempt`: `preempted_req_ids` of the step's SchedulerOutput, kind "recompute" (vLLM V1 frees the
  blocks of a preempted request);
- `admit`: new requests (`scheduled_new_reqs`) and requests resumed after a preemption
  (`scheduled_cached_reqs.resumed_req_ids`), with their `num_computed_tokens` as scheduled: the
  tokens found in the prefix cache;
- `plan`: `num_scheduled_tokens`, in vLLM's order; `emitted`: the requests `update_from_output()`
  gave new tokens; `finished`: those it finished, with vLLM's reason (length; stop, for an EOS or a
  stop token its stop check saw); a client's abort (`finish_requests` called between engine steps) is a
  cancel, taking effect at the next step. vLLM's front end finds stop strings in the detokenized text
  and aborts those requests in the scheduler from inside the same engine step, after its output: the
  recorder (told by the engine loop when it is inside `engine.step()`) writes those as stops on the
  step just written (`TraceWriterV2.amend`), never as cancels;
- `x.vllm.free_blocks`: the block pool's free blocks after the step (kept, not judged).

Each step is written twice: at `schedule()`, before the forward pass runs, a provisional line with its
plan, admissions, preemptions and arrivals, nothing emitted, and `"ran": false`; then, at
`update_from_output()`, the whole step replaces it (`TraceWriterV2.provisional`). An engine that dies
in the forward pass (a budget overrun that kills it) leaves that provisional line as the trace's last,
so `check-trace` judges the step that killed it; the trace has no end line, so nothing is judged of
what the engine would have done after it.

`record_engine_run(workload, out)` runs a workload through a whole engine on the CPU (dummy weights,
in-process engine core so that requests arrive at exact steps) and returns its request outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any, ClassVar

from .vllm_api import checked_once

checked_once()  # before vLLM's classes are imported: a moved API is named here, symbol by symbol

from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402
from vllm.v1.engine import FinishReason  # noqa: E402

from stallfree.spec import Workload  # noqa: E402

from ..trace.v2 import EngineConfig, EngineStep, TraceWriterV2  # noqa: E402
from .vllm_setup import EOS_TOKEN, model_folder, prompt_ids, word  # noqa: E402

REASONS = {FinishReason.LENGTH: "length", FinishReason.STOP: "stop", FinishReason.ABORT: "cancel"}
ENGINE_BLOCK_SIZE = 32  # the CPU engine takes block sizes that are multiples of 32
KV_BYTES = 64 << 20
STOP_WORD = 7  # the token a request with a stop string samples every step


class TraceRecorder(Scheduler):
    """vLLM's scheduler, writing each step to `writer` (set before the engine is built: vLLM makes the
    scheduler itself)."""

    writer: ClassVar[TraceWriterV2 | None] = None
    in_engine_step: ClassVar[bool] = False  # set by the loop that drives the engine, around engine.step()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._step = 0
        self._added: list[tuple[str, int, int]] = []
        self._cancelled: list[str] = []
        self._pending: Any = None  # the step's SchedulerOutput facts, until update_from_output
        self._last: EngineStep | None = None  # the last step written whole

    def add_request(self, request: Any) -> None:
        super().add_request(request)
        self._added.append((request.request_id, request.num_prompt_tokens, request.max_tokens))

    def finish_requests(self, request_ids: Any, finished_status: Any) -> Any:
        """An abort from outside the engine's step is the client's: a cancel, taking effect at the next
        step. One from inside it, after the step's output, is the front end ending requests whose text
        reached a stop string: a stop on the token the step just emitted, written into that step."""
        finished = super().finish_requests(request_ids, finished_status)
        ids = [r.request_id for r in finished]
        if TraceRecorder.in_engine_step and self._pending is None and self._last is not None:
            self._last.finished += [(rid, "stop") for rid in ids]
            if TraceRecorder.writer is not None and TraceRecorder.writer.amend(self._last):
                return finished
            del self._last.finished[-len(ids):]  # cannot be rewritten (a pipe): the cancel vLLM's scheduler saw
        self._cancelled += ids
        return finished

    def schedule(self, *args: Any, **kwargs: Any) -> Any:
        output = super().schedule(*args, **kwargs)
        admit = [(r.req_id, r.num_computed_tokens) for r in output.scheduled_new_reqs]
        cached = output.scheduled_cached_reqs
        admit += [(rid, cached.num_computed_tokens[i]) for i, rid in enumerate(cached.req_ids)
                  if rid in cached.resumed_req_ids]
        plan = list(output.num_scheduled_tokens.items())
        preempt = [(rid, "recompute") for rid in sorted(output.preempted_req_ids)]
        self._pending = (plan, admit, preempt)
        if TraceRecorder.writer is not None:  # before the forward pass: a crash leaves the fatal step
            TraceRecorder.writer.provisional(self._step_line([], [], {}))
        return output

    def update_from_output(self, scheduler_output: Any, model_runner_output: Any) -> Any:
        outputs = super().update_from_output(scheduler_output, model_runner_output)
        emitted, finished = [], []
        for engine_outputs in outputs.values():
            for o in engine_outputs.outputs:
                if o.new_token_ids:
                    emitted.append(o.request_id)
                if o.finish_reason is not None:
                    finished.append((o.request_id, REASONS.get(o.finish_reason, "stop")))
        free = self.kv_cache_manager.block_pool.get_num_free_blocks()
        step = self._step_line(emitted, finished, {"free_blocks": free})
        if TraceRecorder.writer is not None:
            TraceRecorder.writer.step(step)
        self._last = step
        self._step += 1
        self._added, self._cancelled, self._pending = [], [], None
        return outputs

    def _step_line(self, emitted: list[str], finished: list[tuple[str, str]], facts: dict[str, Any]) -> EngineStep:
        """This step's line: the scheduling facts of schedule(), and what the step's output said."""
        plan, admit, preempt = self._pending
        finished = [(rid, "cancel") for rid in self._cancelled] + finished
        return EngineStep(self._step, plan, emitted, finished, list(self._added), [], {}, admit, preempt,
                          {"vllm": facts} if facts else {})


def sampling(max_new: int, stop_after: int | None = None, stop_string: int | None = None) -> Any:
    """Sampling for a request that emits `max_new` tokens (ignoring EOS); with `stop_after`, one that
    samples the model's EOS as its `stop_after`-th token and stops there: EOS is masked for the tokens
    before it (vLLM's min_tokens) and biased to the top from then on (logit_bias), so vLLM's own sampler
    picks it and its scheduler's stop check ends the request, whatever the dummy weights say. With
    `stop_string`, one whose every token is STOP_WORD (biased to the top) and whose stop string is
    `stop_string` of them: the front end's detokenizer finds it in the text of that token and ends the
    request (vLLM aborts it in its scheduler, after the step)."""
    from vllm import SamplingParams

    if stop_string is not None:
        text = " ".join([word(STOP_WORD)] * stop_string)
        return SamplingParams(max_tokens=max_new, ignore_eos=True, stop=[text], logit_bias={STOP_WORD: 100.0})
    if stop_after is None:
        return SamplingParams(max_tokens=max_new, ignore_eos=True, detokenize=False)
    return SamplingParams(max_tokens=max_new, detokenize=False, min_tokens=stop_after - 1,
                          logit_bias={EOS_TOKEN: 100.0})


def record_engine_run(
    workload: Workload, out: IO[str], kv_tokens: int | None = None,
    prompts: Callable[[int, int], list[int]] = prompt_ids, prefix_caching: bool = True,
    cancel: dict[int, int] | None = None, recorder: type[TraceRecorder] = TraceRecorder,
    stops: dict[int, int] | None = None, stop_strings: dict[int, int] | None = None,
) -> list[Any]:
    """Run `workload` through a whole vLLM engine (dummy weights, CPU) and write its trace v2 to `out`.
    The block pool holds `kv_tokens` (default: the workload's K) rounded up to blocks of 32, plus vLLM's
    null block. Each request arrives just before the engine step numbered by its arrival_step (an idle
    engine takes no step: a later arrival then comes at the next step); `cancel` maps a rid to the step
    before which the client withdraws it (vLLM's abort_request); `stops` maps a rid to the number of
    tokens after which it samples the model's EOS and stops, `stop_strings` to the number after which
    its text ends in its stop string (`sampling`; the engine then loads the model's tokenizer);
    `recorder` is TraceRecorder or a subclass (a planted fault). Returns the finished outputs."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm.inputs import TokensPrompt
    from vllm.v1.engine.llm_engine import LLMEngine

    cfg = workload.config
    pool = kv_tokens if kv_tokens is not None else cfg.kv_tokens
    blocks = -(-pool // ENGINE_BLOCK_SIZE)
    engine = LLMEngine.from_engine_args(EngineArgs(
        model=model_folder(), load_format="dummy", skip_tokenizer_init=not stop_strings, dtype="float32",
        enforce_eager=True,
        block_size=ENGINE_BLOCK_SIZE, max_model_len=blocks * ENGINE_BLOCK_SIZE, num_gpu_blocks_override=blocks + 1,
        max_num_seqs=cfg.max_seqs, max_num_batched_tokens=cfg.token_budget, enable_chunked_prefill=True,
        enable_prefix_caching=prefix_caching, scheduler_cls=recorder, async_scheduling=False,
        kv_cache_memory_bytes=KV_BYTES,  # a fixed size: else the CPU worker asks for 92% of the memory
    ))
    config = EngineConfig(cfg.token_budget, cfg.max_seqs, cfg.kv_tokens, ENGINE_BLOCK_SIZE)
    TraceRecorder.writer = TraceWriterV2(out, config, {"engine": "vllm", "run": "whole engine"})
    try:
        arrivals = sorted(workload.requests, key=lambda a: a.arrival_step)
        done: list[Any] = []
        step = 0
        while arrivals or engine.has_unfinished_requests():
            while arrivals and (arrivals[0].arrival_step <= step or not engine.has_unfinished_requests()):
                a = arrivals.pop(0)
                params = sampling(a.max_new, (stops or {}).get(a.rid), (stop_strings or {}).get(a.rid))
                engine.add_request(str(a.rid), TokensPrompt(prompt_token_ids=prompts(a.rid, a.prompt_len)), params)
            withdrawn = [str(rid) for rid, at in (cancel or {}).items() if at == step]
            if withdrawn:
                engine.abort_request(withdrawn, internal=False)
            TraceRecorder.in_engine_step = True  # an abort from inside the step is the engine's own
            try:
                done += [o for o in engine.step() if o.finished]
            finally:
                TraceRecorder.in_engine_step = False
            step += 1
        TraceRecorder.writer.end()
    finally:
        TraceRecorder.writer = None
    return done
