"""SGLang's retraction with its radix cache on, behind the prefix-caching design's protocol
(docs/prefix.md), for `stallfree conform stallfree.conformance.engines.sglang_radix:SglangRadix
--profile prefix`.

`sglang_paged.SglangPaged` turns SGLang's radix cache off, since the paged protocol has no word for a
cached prefix. The prefix protocol has one: a request's `content` says which leading prompt tokens it
shares, and a plan's `cached` names the tokens each admission holds from the cache. This adapter is
`SglangPaged` (ratio 0.7 held fixed, SGLang's retraction) with the cache on:

- add(rid, prompt_len, max_new, content): the prompt's tokens are made up from its content, token `o`
  of segment `(content_id, length)` the same token in every prompt that carries it, the rest its own;
  so SGLang's radix cache matches what the contract calls a hit.
- A plan's `cached` is, for each request the step admits (not the chunked one carried on), SGLang's
  own match, `Req.prefix_len`, when above 0: its prompt's leading tokens in the tree (at most all but
  the last prefill token, SGLang's `_compute_max_prefix_len`), a retracted request's too.
- `free_blocks` is SGLang's allocator's free tokens plus its tree's evictable ones (unlocked cached
  tokens), as the prefix design counts free cached blocks free.
- The free cached blocks' keys (the protocol's optional `cached` view) are not shown: SGLang's tree
  holds tokens, not the contract's block keys, so EVICT-LRU is judged on the plans' hits alone.
"""

from __future__ import annotations

from array import array
from typing import Any, ClassVar

from stallfree.prefix.contract.keys import check_content

from .sglang_paged import SglangPaged, SglangPlan
from .sglang_setup import make_req, own_token

CONTENT_TOKENS = 1 << 50  # content tokens lie above every rid's own


class SglangPrefixPlan(SglangPlan):
    """SGLang's plan, with (rid, tokens SGLang's radix cache served it) for each admission that hit."""

    cached: tuple[tuple[int, int], ...] = ()


def prompt_ids(rid: int, prompt_len: int, content: tuple[tuple[int, int], ...]) -> array:
    """The made-up prompt: the content's tokens (the same in every prompt that carries them), then its own."""
    ids = array("q", (CONTENT_TOKENS + (cid << 24) + o for cid, length in content for o in range(length)))
    ids.extend(own_token(rid, i) for i in range(len(ids), prompt_len))
    return ids


class SglangRadix(SglangPaged):
    """SGLang's policy (ratio 0.7, radix cache on) with its retraction, behind the prefix protocol."""

    design: ClassVar[str] = "prefix"  # judged by the prefix monitor (stallfree.spec.registry)
    radix_cache: ClassVar[bool] = True

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.carried: Any = None  # the chunked request this step's prefill carries on, not an admission

    def add(self, rid: int, prompt_len: int, max_new: int, content: tuple[tuple[int, int], ...] = ()) -> None:
        self.check_peak(rid, prompt_len, max_new)
        content = check_content(content, prompt_len)  # raises naming the field where it is no content
        self.waiting_queue.append(self.request(rid, prompt_len, max_new, content))
        self._taken.add(rid)

    def request(self, rid: int, prompt_len: int, max_new: int, content: tuple[tuple[int, int], ...] = ()) -> Any:
        """SGLang's Req for an accepted request, its prompt made up from its content."""
        return make_req(rid, prompt_len, max_new, ids=prompt_ids(rid, prompt_len, content))

    def _prefill(self) -> Any:
        self.carried = self.chunked
        return super()._prefill()

    def plan(self, entries: list[tuple[int, int]], retracted: list[int]) -> SglangPrefixPlan:
        plan = SglangPrefixPlan(entries)
        plan.preempted = tuple(retracted)
        batch = self.pending
        if entries and batch is not self.running_batch:
            plan.cached = tuple((int(r.rid), int(r.prefix_len)) for r in batch.reqs
                                if r is not self.carried and r.prefix_len > 0)
        return plan

    @property
    def free_blocks(self) -> int:
        return int(self.allocator.available_size() + self.tree.evictable_size())
