"""The prefix-caching design's state invariants: the paged ones, with BLOCKS re-read for shared blocks
and one of its own (REFCOUNT), judged between actions by the prefix model check and state machine.

BLOCKS: the distinct blocks running requests hold plus the free ones (empty and free cached) are the
pool; the scheduler shows that many free, and shows as its free cached blocks (`cached`) the
contract's. REFCOUNT: each held cached block counts exactly the running requests holding it, and no
block is both held and free (FREE-AT-ZERO's state form).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

from stallfree.spec import invariant
from stallfree.spec.invariant import Invariant, Origin
from stallfree.spec.paged import invariants as paged
from stallfree.spec.paged.shadow import blocks_for

from .shadow import PrefixShadow, PrefixTrack


def holders(s: PrefixShadow) -> Counter[object]:
    """Cached content block key -> the running requests holding it (their `shared` keys)."""
    count: Counter[object] = Counter()
    for t in s.running.values():
        count.update(key for key in cast(PrefixTrack, t).shared if key is not None)
    return count


def blocks(s: PrefixShadow, v: Any) -> str | None:
    """BLOCKS, prefix reading: distinct held blocks plus free blocks are the pool, as the scheduler shows."""
    bs = s.pool.block_size
    shared = holders(s)
    held = sum(blocks_for(t.num_computed, bs) for t in s.running.values()) - sum(shared.values()) + len(shared)
    cache = s.cache
    if held + cache.num_free != s.pool.num_blocks or s.free_blocks != cache.num_free:
        return (f"running requests hold {held} distinct blocks and {cache.num_free} are free "
                f"({cache.num_empty} empty, {len(cache.lru)} cached); the pool is {s.pool.num_blocks}")
    shown = getattr(v, "free_blocks", None)
    if type(shown) is int and shown != s.free_blocks:
        return f"the scheduler shows free_blocks={shown}; the contract has {s.free_blocks}"
    view = getattr(v, "cached", None)
    if isinstance(view, tuple) and list(view) != list(cache.lru):
        return f"the scheduler shows {len(view)} free cached blocks; the contract has {len(cache.lru)}, in order"
    return None


def refcount(s: PrefixShadow, v: Any) -> str | None:
    """REFCOUNT: each held cached block's count is the running requests holding it; none is also free."""
    shared = holders(s)
    if dict(shared) != s.cache.refs:
        return f"held cached blocks counted {sorted(s.cache.refs.values())}; their holders {sorted(shared.values())}"
    both = set(s.cache.refs) & set(s.cache.lru)
    if both:
        return f"{len(both)} block(s) are held and free cached at once"
    return None


def prefix(check: Any) -> Any:
    return cast(Any, check)


BY_ID = {i.id: i for i in paged.PAGED_INVARIANTS}
PREFIX_INVARIANTS: tuple[Invariant, ...] = (
    BY_ID["TYPES"],
    Invariant("BLOCKS", Origin.STATED, "distinct held blocks plus the free ones are the pool; the scheduler "
              "shows the free count and its free cached blocks as the contract has them.", prefix(blocks),
              reads_scheduler=True),
    Invariant("REFCOUNT", Origin.DERIVED, "each held cached block counts the running requests holding it, and "
              "no block is held and free at once.", prefix(refcount), premises=("FREE-AT-ZERO",)),
    BY_ID["LINE"], BY_ID["ONE-PARTIAL"], BY_ID["READY-WITHIN-BUDGET"], BY_ID["LONE-BLOCK"],
)


def broken(shadow: PrefixShadow, scheduler: Any) -> tuple[str, str] | None:
    """The first prefix invariant the state breaks, as (ID, what happened), or None."""
    return invariant.broken(cast(Any, shadow), scheduler, PREFIX_INVARIANTS)
