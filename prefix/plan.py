"""The prefix-caching design's plan: the paged plan, plus the tokens each admission took from the cache."""

from __future__ import annotations

from dataclasses import dataclass

from stallfree.paged.plan import PagedPlan


@dataclass(frozen=True, slots=True)
class PrefixPlan(PagedPlan):
    """A `PagedPlan` that also names, for each admission that hit the cache, (rid, cached tokens): the
    leading positions it holds from cached blocks. Its entry's chunk starts after them."""

    cached: tuple[tuple[int, int], ...] = ()
