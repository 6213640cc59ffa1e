"""vLLM's own V1 scheduler with automatic prefix caching on, behind the prefix design's protocol
(docs/prefix.md), for `stallfree conform stallfree.conformance.engines.vllm_prefix:VllmPrefixScheduler
--profile prefix`.

The paged adapter (`vllm_paged`), plus:

- `add(rid, prompt_len, max_new, content)`: the request's token ids are its content's, token `o` of
  content `c` one id for every request (so vLLM's block hashes of a shared system prompt agree), then
  ids of its own; the token each request samples is its own too, so no answer shares a block with
  another's (the contract's contents model prompts only);
- each plan's `cached`: the tokens vLLM found in its prefix cache for each request it admitted or
  resumed this step (`num_computed_tokens` of the scheduled new and resumed requests), as the prefix
  monitor reads them;
- the `cached` view: vLLM's free blocks that hold a cached block, in its free queue's order (the next
  to be evicted first), each named by the contract's key for the same tokens (`prefix.contract.keys`:
  a content block by its content, a block of a request's own tokens by (-1, rid, index)), learned from
  each request's vLLM block hashes as they appear. EVICT-LRU and FREE-AT-ZERO read it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .vllm_paged import VllmPagedScheduler, VllmPlan
from .vllm_setup import make_request

UNKNOWN = -2  # the first element of the key shown for a cached vLLM block no request's hashes named

CONTENT_BASE = 1_000_000  # token o of content c is CONTENT_BASE + c * SPAN + o
OWN_BASE = 1_000_000_000  # token i of rid r's own is OWN_BASE + r * SPAN + i
SAMPLED_BASE = 2_000_000_000  # every token rid r samples is SAMPLED_BASE + r
SPAN = 100_000


class VllmPrefixPlan(VllmPlan):
    """A paged plan with `cached`: (rid, tokens found in vLLM's prefix cache) per admission."""

    cached: tuple[tuple[int, int], ...] = ()


def token_ids(rid: int, prompt_len: int, content: tuple[tuple[int, int], ...]) -> list[int]:
    ids = [CONTENT_BASE + cid * SPAN + o for cid, length in content for o in range(length)]
    return ids + [OWN_BASE + rid * SPAN + i for i in range(len(ids), prompt_len)]


class VllmPrefixScheduler(VllmPagedScheduler):
    """vLLM's scheduler with prefix caching, behind the prefix protocol (see the module)."""

    design: ClassVar[str] = "prefix"
    prefix_caching: ClassVar[bool] = True

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int, **kwargs: Any) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, **kwargs)
        self._content: tuple[tuple[int, int], ...] = ()  # the content of the request being added
        self._keys: dict[int, list[Any]] = {}  # rid -> the contract's keys of its content's full blocks
        self._key_of: dict[bytes, Any] = {}  # vLLM's block hash -> the contract's key of that block

    def add(self, rid: int, prompt_len: int, max_new: int, content: object = ()) -> None:
        from stallfree.prefix.contract.keys import check_content, content_keys

        segments = check_content(content, prompt_len) if content else ()
        self._content = segments
        try:
            super().add(rid, prompt_len, max_new)
        finally:
            self._content = ()
        self._keys[rid] = content_keys(segments, self.block_size) if segments else []
        self._learn()

    def _learn(self) -> None:
        """Name each live request's vLLM block hashes by the contract's keys for the same blocks."""
        from stallfree.prefix.contract.keys import own_key

        for request_id, request in self._scheduler.requests.items():
            rid = int(request_id)
            keys = self._keys.get(rid, [])
            for i, block_hash in enumerate(request.block_hashes):
                self._key_of.setdefault(block_hash, keys[i] if i < len(keys) else own_key(rid, i))

    @property
    def cached(self) -> tuple[Any, ...]:
        from vllm.v1.core.kv_cache_utils import get_block_hash

        self._learn()
        queue = self._scheduler.kv_cache_manager.block_pool.free_block_queue
        shown = []
        for block in queue.get_all_free_blocks():
            if block.block_hash is not None:
                block_hash = get_block_hash(block.block_hash)
                shown.append(self._key_of.get(block_hash, (UNKNOWN, block_hash.hex()[:16], 0)))
        return tuple(shown)

    def request(self, rid: int, prompt_len: int, max_new: int) -> Any:
        ids = token_ids(rid, prompt_len, self._content)
        return make_request(str(rid), ids, max_new, self.block_size, ignore_eos=False)

    @staticmethod
    def sampled_token(request_id: str) -> int:
        return SAMPLED_BASE + int(request_id)

    def schedule(self) -> VllmPrefixPlan:
        plan = super().schedule()
        out = VllmPrefixPlan(plan)
        out.preempted = plan.preempted
        output = self._output
        cached = [(int(r.req_id), r.num_computed_tokens) for r in output.scheduled_new_reqs]
        resumed = output.scheduled_cached_reqs
        cached += [(int(rid), resumed.num_computed_tokens[i]) for i, rid in enumerate(resumed.req_ids)
                   if rid in resumed.resumed_req_ids]
        out.cached = tuple(cached)
        return out
