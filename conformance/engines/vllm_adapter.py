"""vLLM's own V1 scheduler (`vllm.v1.core.sched.scheduler.Scheduler`) behind the plain protocol, in
process, for `stallfree conform stallfree.conformance.engines.vllm_adapter:VllmScheduler`.

What is vLLM's and what is the adapter's:

- Every plan is the `num_scheduled_tokens` of vLLM's `schedule()`, entry for entry, in vLLM's order;
  the emitted rids are the requests `update_from_output()` gave a token. The forward pass is faked
  (one token for each request due one), which is all the scheduler sees of a model.
- vLLM's config validation is vLLM's: a budget below max_seqs is refused by the factory with vLLM's
  ValueError, and the kit skips that config.
- add() is the adapter's: vLLM's scheduler checks nothing, its front end does. The adapter refuses
  what the contract refuses (rule NEVER-FIT judges this check, not vLLM).
- `VllmScheduler`: the block pool holds max_seqs requests of K tokens each, so vLLM never runs out of
  blocks and never preempts: the plain protocol has no word for a preemption, and the kit's model
  could not follow one. Memory never binds, so rule KV says nothing about vLLM through it (declared
  not applicable, with the reason); every other rule is judged on vLLM's real decisions.
- `VllmKvScheduler`: the block pool holds K tokens (K / block_size blocks, rounded up, plus vLLM's
  null block), as a deployment sized for K would. Memory binds, so rule KV judges vLLM's admission
  against the contract's reservation design. When vLLM preempts, schedule() raises `Preempted`: the
  kit reports it as a CRASH with the smallest workload that makes vLLM preempt, and goes on with the
  other configs. Preemption itself is judged live by the paged adapter (`vllm_paged`, profile `paged`)
  and from recorded traces (`vllm_recorder`, trace v2).
- Prefix caching is off: prompts are made up (`prompt_ids`), and the plain protocol has no word for a
  cached prefix either (`vllm_prefix` turns it on, under the prefix design's protocol).
"""

from __future__ import annotations

from typing import ClassVar

from .front_end import check_request
from .vllm_setup import faked_forward, make_request, make_scheduler, prompt_ids, vllm_config

BLOCK_SIZE = 16
NEVER_FIT_IS_THE_ADAPTERS = (
    "add() is the adapter's own check of the contract's refusals: vLLM's scheduler checks no request, its "
    "front end does, so NEVER-FIT would judge the adapter, not vLLM")


class Preempted(RuntimeError):
    """vLLM preempted a request: the plain protocol cannot say so, so the run cannot be judged past it."""


class VllmScheduler:
    """vLLM's scheduler with memory that never binds (see the module's docstring)."""

    stallfree_not_applicable: ClassVar[dict[str, str]] = {
        "KV": "the adapter gives vLLM a block pool of max_seqs x kv_tokens, so that it never preempts (the plain "
              "protocol has no word for a preemption): memory never binds and the reservation rule says nothing "
              "about vLLM here; VllmKvScheduler and recorded traces judge vLLM's memory",
        "NEVER-FIT": NEVER_FIT_IS_THE_ADAPTERS,
    }

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int, block_size: int = BLOCK_SIZE) -> None:
        self.kv_tokens = kv_tokens
        self.block_size = block_size
        config = vllm_config(token_budget, max_seqs, kv_tokens, block_size, prefix_caching=False)
        self._scheduler = make_scheduler(config, self.num_blocks(max_seqs, kv_tokens, block_size))
        self._taken: set[int] = set()
        self._output: object = None

    @staticmethod
    def num_blocks(max_seqs: int, kv_tokens: int, block_size: int) -> int:
        """max_seqs requests of kv_tokens each, plus the pool's null block."""
        return max_seqs * -(-kv_tokens // block_size) + 1

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        check_request(rid, prompt_len, max_new, self._taken)
        if prompt_len + max_new > self.kv_tokens:
            raise ValueError(f"prompt_len + max_new = {prompt_len + max_new} exceeds max_model_len {self.kv_tokens}")
        self._scheduler.add_request(make_request(str(rid), prompt_ids(rid, prompt_len), max_new, self.block_size))
        self._taken.add(rid)

    def schedule(self) -> list[tuple[int, int]]:
        output = self._scheduler.schedule()
        if output.preempted_req_ids:
            raise Preempted(f"vLLM preempted {sorted(output.preempted_req_ids, key=int)} (recompute: their KV is "
                            "freed and they go back to the front of the waiting queue)")
        self._output = output
        return [(int(request_id), n) for request_id, n in output.num_scheduled_tokens.items()]

    def complete(self, plan: object) -> list[int]:
        output, self._output = self._output, None
        if output is None:
            raise RuntimeError("complete() without a pending schedule()")
        engine_outputs = self._scheduler.update_from_output(output, faked_forward(self._scheduler, output))
        return [int(o.request_id) for outputs in engine_outputs.values() for o in outputs.outputs if o.new_token_ids]


class VllmKvScheduler(VllmScheduler):
    """vLLM's scheduler over a block pool of K tokens: memory binds (see the module's docstring)."""

    stallfree_not_applicable: ClassVar[dict[str, str]] = {"NEVER-FIT": NEVER_FIT_IS_THE_ADAPTERS}

    @staticmethod
    def num_blocks(max_seqs: int, kv_tokens: int, block_size: int) -> int:
        """K tokens, rounded up to whole blocks, plus the pool's null block."""
        return -(-kv_tokens // block_size) + 1
