"""Z3 theorems of the prefix-caching design, proved of the scheduler's own methods (`symexec.paths` runs
them on symbolic values down every feasible path), for any lengths, budget, pool and watermark, at each block
size of `BLOCK_SIZES`:

- **CACHED-NOT-CHARGED** (`Scheduler.first_chunk`): an admission after `cached` tokens from the cache,
  with `left` budget, gets a first chunk of exactly min(prefill after the hit, left): the cached
  tokens cost no budget, and the chunk neither overruns the budget nor the prefill.
- **WATERMARK** (`Scheduler.hit_admits`, prefix reading): an admission taking `revived` free cached
  blocks back and the new blocks its chunk needs is allowed only if at least `watermark` blocks stay
  free; **WORK-CONSERVING** (its admission part): and it is allowed whenever they do, with or without
  requests running.

Each claim is stated from the rule's text in Z3 (the blocks a chunk needs written as a ceiling here,
not through the code's `blocks_for`), and the method's result is the code's. A fault of
`stallfree.prefix.faults` that overrides the method is refuted by the same theorem: ChargeCached
(CACHED-NOT-CHARGED), IgnoreWatermark (WATERMARK), CountRevivedTwice (WORK-CONSERVING).

The rules whose code uses dicts (the hit's match over the cached keys, the hold and release of blocks)
are proved in `prefix_cache`, with the dicts made symbolic and the number of blocks bounded (3; deep: 4):
SHARED-READONLY, HIT-SAME-TOKENS, CACHED-NOT-PREFILLED (`match` then `hold`), FREE-AT-ZERO (`release`)
and EVICT-LRU (`evict` on a concrete free list with the free count symbolic, and `release`'s order), at
block sizes 1, 2, 3. The admission step itself (the loop around `match` and `hold`, the budget it
spends and `prefilled`, the blocks complete() caches) is proved in `prefix_admit`, by running the
scheduler's own schedule() then complete() from every cache state its own code reaches within a bound
(1 cached block, one or two waiting requests; deep: 2): CACHED-NOT-CHARGED, SHARED-READONLY and
CACHED-NOT-PREFILLED again, each a second row of its rule (controls: `prefix_planted.ChargeInLoop`,
`WriteHeldQuietly`, `SkipPrefilled`). `NOT_PROVED` names any prefix rule left without a theorem (none
now): its row reads not checked, never holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import z3

from stallfree.spec.verdict import Verdict

from . import prefix_admit as admit
from . import prefix_cache as cache
from . import symexec
from .symexec import Int

BLOCK_SIZES = (1, 2, 3, 16)  # as the paged step theorems


@dataclass(frozen=True, slots=True)
class PrefixTheorem:
    name: str  # the rule ID
    method: str  # the scheduler method it is about
    obligation: Callable[..., tuple[z3.BoolRef, z3.BoolRef]]  # (scheduler, block size[, blocks]) -> (hypothesis, goal)
    control: str  # the prefix fault it must fail on (`stallfree.prefix.faults`, else `prefix_planted`)
    block_sizes: tuple[int, ...] = BLOCK_SIZES
    bound: str = "any value"  # what the theorem is proved for, as prove's row says
    blocks: int = cache.BLOCKS  # the bounded theorems' bound (`prefix_cache`'s, or `prefix_admit`'s)
    deep_blocks: int = cache.DEEP_BLOCKS  # ... with prove --profile deep


@dataclass(frozen=True, slots=True)
class PrefixOutcome:
    theorem: str
    scheduler: str
    verdict: Verdict  # holds (proved), BROKEN (Z3 found a counterexample), unknown (refused, or no answer)
    seconds: float
    counterexample: dict[str, Any] | None = None


def _scheduler(cls: type, block_size: int) -> Any:
    """An instance of `cls` (the prefix scheduler or a fault) with blocks of `block_size` tokens."""
    from stallfree.prefix.faults import PrefixFault

    if issubclass(cls, PrefixFault):
        scheduler = cls(4, 2, 64)
        scheduler.block_size = block_size
        return scheduler
    return cls(4, 2, 64, block_size=block_size, watermark=0)


def first_chunk(scheduler: Any, bs: int) -> tuple[z3.BoolRef, z3.BoolRef]:
    target, num, left = z3.Ints("target num left")
    cached = num * bs
    paths = symexec.paths(lambda ex: scheduler.first_chunk(SimpleNamespace(target=Int(target, ex)), Int(cached, ex),
                                                           Int(left, ex)))
    n = symexec.as_term(paths)
    hypothesis = z3.And(num >= 0, cached < target, left >= 1)  # a hit leaves its last prefill token
    owed = z3.If(target - cached < left, target - cached, left)
    return hypothesis, z3.And(n == owed, n >= 1, n <= left, cached + n <= target)


def _admits(scheduler: Any, bs: int, running: bool) -> tuple[z3.BoolRef, z3.BoolRef, z3.BoolRef]:
    """(hypothesis, the code's decision, the rule's: the blocks left free reach the watermark)."""
    num, revived, n, free, watermark = z3.Ints("num revived n free watermark")
    scheduler._running = {0: None} if running else {}

    def run(ex: symexec.Explorer) -> Any:
        scheduler._free_blocks, scheduler.watermark = Int(free, ex), Int(watermark, ex)
        return scheduler.hit_admits(Int(num, ex), Int(revived, ex), Int(n, ex))

    admits = symexec.as_term(symexec.paths(run))
    new = (num * bs + n + bs - 1) / bs - num  # the new blocks the chunk needs past the hit's
    hypothesis = z3.And(num >= 0, revived >= 0, revived <= num, n >= 1, free >= revived, watermark >= 0)
    return hypothesis, admits, free - revived - new >= watermark


def _with_and_without_running(scheduler: Any, bs: int, decides: bool) -> tuple[z3.BoolRef, z3.BoolRef]:
    """`decides`: an admission leaves the watermark (WATERMARK); else one that would is admitted
    (WORK-CONSERVING's admission part); with no request running and with some."""
    goals = []
    for running in (False, True):
        hypothesis, admits, leaves = _admits(scheduler, bs, running)
        goals.append(z3.Implies(z3.And(hypothesis, admits), leaves) if decides
                     else z3.Implies(z3.And(hypothesis, leaves), admits))
    return z3.BoolVal(True), z3.And(goals)


def watermark_kept(scheduler: Any, bs: int) -> tuple[z3.BoolRef, z3.BoolRef]:
    return _with_and_without_running(scheduler, bs, True)


def admits_what_fits(scheduler: Any, bs: int) -> tuple[z3.BoolRef, z3.BoolRef]:
    return _with_and_without_running(scheduler, bs, False)


CACHE_BOUND = "<= {blocks} blocks"
ADMIT_BOUND = "<= {blocks} block(s), <= 2 waiting"  # prefix_admit's shapes
STEP = "schedule+complete"
THEOREMS: tuple[PrefixTheorem, ...] = (
    PrefixTheorem("CACHED-NOT-CHARGED", "first_chunk", first_chunk, "ChargeCached"),
    PrefixTheorem("WATERMARK", "hit_admits", watermark_kept, "IgnoreWatermark"),
    PrefixTheorem("WORK-CONSERVING", "hit_admits", admits_what_fits, "CountRevivedTwice"),
    PrefixTheorem("SHARED-READONLY", "match+hold", cache.shared_readonly, "WriteShared", cache.BLOCK_SIZES,
                  CACHE_BOUND),
    PrefixTheorem("HIT-SAME-TOKENS", "match+hold", cache.hit_same_tokens, "HitOneMore", cache.BLOCK_SIZES,
                  CACHE_BOUND),
    PrefixTheorem("CACHED-NOT-PREFILLED", "match+hold", cache.cached_not_prefilled, "HitOneShort",
                  cache.BLOCK_SIZES, CACHE_BOUND),
    PrefixTheorem("FREE-AT-ZERO", "release", cache.free_at_zero, "FreeWhileHeld", cache.BLOCK_SIZES, CACHE_BOUND),
    PrefixTheorem("EVICT-LRU", "evict+release", cache.evict_lru, "EvictNewest", cache.BLOCK_SIZES, CACHE_BOUND),
    PrefixTheorem("CACHED-NOT-CHARGED", STEP, admit.cached_not_charged, "ChargeInLoop", admit.BLOCK_SIZES,
                  ADMIT_BOUND, admit.BLOCKS, admit.DEEP_BLOCKS),
    PrefixTheorem("SHARED-READONLY", STEP, admit.shared_readonly, "WriteHeldQuietly", admit.BLOCK_SIZES,
                  ADMIT_BOUND, admit.BLOCKS, admit.DEEP_BLOCKS),
    PrefixTheorem("CACHED-NOT-PREFILLED", STEP, admit.cached_not_prefilled, "SkipPrefilled", admit.BLOCK_SIZES,
                  ADMIT_BOUND, admit.BLOCKS, admit.DEEP_BLOCKS),
)
NOT_PROVED: dict[str, str] = {}  # a prefix rule with no theorem here: its row says why, never that it holds


def bound(theorem: PrefixTheorem, deep: bool = False) -> str:
    """What `theorem` is proved for: any value, or the cache theorems' bound (deeper with `deep`)."""
    return theorem.bound.format(blocks=theorem.deep_blocks if deep else theorem.blocks)


def prove(theorem: PrefixTheorem, cls: type | None = None, timeout_ms: int = 60_000,
          deep: bool = False) -> PrefixOutcome:
    """The theorem of `cls`'s own method (default the prefix scheduler) at every block size; `deep`: the
    cache theorems at `prefix_cache.DEEP_BLOCKS`."""
    from stallfree.prefix import Scheduler

    cls = Scheduler if cls is None else cls
    began = time.perf_counter()
    for bs in theorem.block_sizes:
        try:
            scheduler = _scheduler(cls, bs)
            hypothesis, goal = (theorem.obligation(scheduler, bs, theorem.deep_blocks)  # type: ignore[call-arg]
                                if deep and theorem.bound != "any value" else theorem.obligation(scheduler, bs))
        except symexec.Refused as error:
            return PrefixOutcome(theorem.name, cls.__name__, Verdict.UNKNOWN, time.perf_counter() - began,
                                 {"refused": str(error)})
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(hypothesis, z3.Not(goal))
        verdict = solver.check()
        if verdict == z3.sat:
            model = solver.model()
            values = {str(d): model[d].as_long() if z3.is_int_value(model[d]) else z3.is_true(model[d])
                      for d in model.decls() if z3.is_int_value(model[d]) or z3.is_bool(model[d])}
            explain = getattr(theorem.obligation, "explain", None)  # which shape, where the theorem enumerates them
            return PrefixOutcome(theorem.name, cls.__name__, Verdict.BROKEN, time.perf_counter() - began,
                                 {"block_size": bs, **values, **(explain(model) if explain else {})})
        if verdict != z3.unsat:
            return PrefixOutcome(theorem.name, cls.__name__, Verdict.UNKNOWN, time.perf_counter() - began)
    return PrefixOutcome(theorem.name, cls.__name__, Verdict.HOLDS, time.perf_counter() - began)


def control(theorem: PrefixTheorem) -> type:
    from stallfree.prefix import faults

    from . import prefix_planted

    return getattr(faults, theorem.control, None) or getattr(prefix_planted, theorem.control)  # type: ignore[no-any-return]
