"""What an imported trace's cached prefixes rest on, claim by claim (`stallfree import-trace`).

A trace recorded in vLLM's own terms has no token ids, so the tokens an admission found in vLLM's
prefix cache are inferred (`import_vllm`), and no inference can show that the blocks held those
tokens. What can be checked is whether the cache could have held them at all. Each admission's claim
is one of:

- **checked**: a resumed request's, within the whole blocks it held itself when it was preempted (its
  own KV, freed into the cache; vLLM may have evicted some since, never added any);
- **trusted**: a claim no fact of the trace rules out, nor confirms: another request had computed at
  least that many tokens (as whole blocks) before, and a shared prefix would be in its blocks, but the
  trace cannot say the tokens were the same. It is written as inferred, and listed;
- **refused**: a claim the cache cannot have served: negative, not whole blocks, or more tokens than
  any request had computed by then (nothing that long was ever cached). It is written as 0, so the
  checker judges the chunks against it (a skipped block is then PREFILL-ONCE or FIRST-TOKEN).

`verify(steps, block_size)` applies this to v2 steps and returns the report beside them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..trace.v2 import EngineStep


@dataclass(slots=True)
class CacheClaims:
    """Each admission's claim, by what it rests on: (step, rid, cached tokens[, why])."""

    source: str = "inferred"  # or "claimed": the engine's own numbers, judged all the same
    checked: list[tuple[int, Any, int]] = field(default_factory=list)
    trusted: list[tuple[int, Any, int]] = field(default_factory=list)
    refused: list[tuple[int, Any, int, str]] = field(default_factory=list)

    def summary(self) -> str:
        """One line a person reads: what was inferred and what it rests on."""
        claims = len(self.checked) + len(self.trusted) + len(self.refused)
        if not claims:
            return f"no cached prefix {self.source} (every admission prefills from token 0)"
        return (f"cached prefixes {self.source} for {claims} admission(s): {len(self.checked)} checked against the "
                f"request's own blocks before its preemption; {len(self.trusted)} trusted unchecked (another "
                f"request had that many tokens in KV, but the trace has no token ids); {len(self.refused)} "
                "refused, no cache could hold them (written as 0: judged as prefilled)")

    def as_meta(self) -> dict[str, Any]:
        return {"source": self.source, "checked": [list(c) for c in self.checked],
                "trusted": [list(c) for c in self.trusted], "refused": [list(c) for c in self.refused]}


@dataclass(slots=True)
class _Cache:
    """What the trace shows of the tokens each request has in KV, and had before its preemption."""

    block_size: int
    in_kv: dict[Any, int] = field(default_factory=dict)
    held_when_preempted: dict[Any, int] = field(default_factory=dict)
    longest: int = 0  # the most tokens any one request has had in KV so far

    def whole(self, tokens: int) -> int:
        return tokens - tokens % self.block_size

    def judge(self, step: int, rid: Any, cached: int, claims: CacheClaims) -> int:
        """The cached prefix to write for `rid`'s admission, recording what it rests on."""
        if cached == 0:
            return 0
        if cached < 0 or cached % self.block_size:
            claims.refused.append((step, rid, cached, "not a whole number of blocks"))
            return 0
        own = self.whole(self.held_when_preempted.get(rid, 0))
        if cached <= own:
            claims.checked.append((step, rid, cached))
            return cached
        others = self.whole(max((n for r, n in self.in_kv.items() if r != rid), default=0))
        if cached <= max(others, self.whole(self.longest)):
            claims.trusted.append((step, rid, cached))
            return cached
        claims.refused.append((step, rid, cached, f"no request had {cached} tokens in KV by then"))
        return 0

    def computed(self, rid: Any, tokens: int) -> None:
        self.in_kv[rid] = self.in_kv.get(rid, 0) + tokens
        self.longest = max(self.longest, self.in_kv[rid])


def verify(steps: Iterable[EngineStep], block_size: int, claims: CacheClaims) -> Iterator[EngineStep]:
    """`steps` with each admission's cached prefix judged (`_Cache.judge`), the verdicts in `claims`."""
    cache = _Cache(block_size)
    for step in steps:
        for rid, _ in step.preempt:
            cache.held_when_preempted[rid] = cache.in_kv.pop(rid, 0)
        claimed = dict(step.admit)
        admitted: dict[Any, int] = {}
        for rid, n in step.plan:  # in plan order: vLLM caches a block when it schedules it
            if rid in claimed and rid not in admitted:
                admitted[rid] = cache.in_kv[rid] = cache.judge(step.step, rid, claimed[rid], claims)
            cache.computed(rid, n)
        for rid, cached in step.admit:  # admitted but not planned: judged all the same
            if rid not in admitted:
                admitted[rid] = cache.judge(step.step, rid, cached, claims)
        step.admit = [(rid, admitted[rid]) for rid, _ in step.admit]
        for rid, _ in step.finished:
            cache.in_kv.pop(rid, None)  # its blocks stay cached, counted in `longest`
        yield step
