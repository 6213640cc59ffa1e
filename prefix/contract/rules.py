"""The rules of the prefix-caching design, by ID: the paged registry, with the rules the cache changes
re-read and six of its own. The registry the prefix monitor, the kit's `prefix` profile, the prefix
state machine and the prefix model check iterate over.

Unchanged from the paged design (the very same `Rule` objects): PREEMPT-BOUND, BUDGET, ONE-ENTRY,
SLOTS, RECOMPUTE (each residency's chunks run from where its KV ends, the hit's end for an admission,
to prompt + emitted), FIRST-TOKEN, TOKENS-KEPT, CANCEL, NEVER-FIT, PROGRESS, FCFS, DECODE-FIRST and
PARTIAL-NEXT. Re-read for shared blocks (same IDs, same statements): PREEMPT-ORDER (a victim frees only
the blocks no other request holds), BLOCKS, WATERMARK and WORK-CONSERVING (a hit takes free cached
blocks back from the free pool; its chunk needs new blocks only past the hit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from stallfree.spec.paged import rules as paged
from stallfree.spec.paged.shadow import blocks_for
from stallfree.spec.rule import Kind, Premise, Rule, StepCheck, select_from

from .shadow import PrefixFacts, PrefixShadow, PrefixTrack, release

__all__ = ["PREFIX_BY_ID", "PREFIX_RULES", "PREFIX_RULE_IDS", "select"]

DESIGN = "prefix"
PrefixCheck = Callable[[PrefixShadow, PrefixFacts], "str | None"]


def prefix(check: PrefixCheck) -> StepCheck:
    return cast(StepCheck, check)


# -- the hit -----------------------------------------------------------------------------------------


def shared_readonly(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """SHARED-READONLY, judged on the plan: a hit is whole blocks, so every chunk computes into blocks
    its request alone holds and no cached block is written."""
    bs = s.pool.block_size
    for rid, n in f.claimed.items():
        if n % bs:
            return (f"rid {rid} holds {n} cached tokens: its chunk writes position {n} into cached block "
                    f"{n // bs} (blocks of {bs})")
    return None


def hit_same_tokens(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """HIT-SAME-TOKENS, judged on the plan: an admission holds from the cache only blocks whose tokens,
    and the prefix before them, are its own, and never its last prefill token (the chunk that
    computes it emits the request's next token)."""
    bs = s.pool.block_size
    for c in f.admitted:
        rid = c.track.rid
        claimed, (num, _) = f.claimed.get(rid, 0), f.expected[rid]
        if claimed >= c.track.target:
            return f"rid {rid} holds {claimed} cached tokens of a {c.track.target}-token prefill: none left to emit"
        if claimed > num * bs:
            return (f"rid {rid} holds {claimed} cached tokens; only its first {num * bs} are cached with its tokens "
                    "and prefix")
    return None


def cached_not_prefilled(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """CACHED-NOT-PREFILLED, judged on the plan: an admission holds every leading block cached with its
    tokens (up to its last prefill token), and prefills only the rest."""
    bs = s.pool.block_size
    for c in f.admitted:
        rid = c.track.rid
        claimed, (num, _) = f.claimed.get(rid, 0), f.expected[rid]
        if claimed < num * bs:
            return (f"rid {rid} holds {claimed} cached tokens and prefills from there; its first {num * bs} "
                    "are cached")
    return None


def cached_not_charged(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """CACHED-NOT-CHARGED, judged on the plan: an admission's first chunk is min(prefill after its hit,
    budget left at its turn): cached tokens cost no budget."""
    left = s.config.token_budget - f.num_decode_tokens - sum(c.n for c in f.chunks)
    for c in f.admitted:
        owed = min(c.track.target - c.start, left)
        if c.n != owed:
            return (f"admitted rid {c.track.rid} after {c.start} cached tokens got a chunk of {c.n}; with "
                    f"{c.track.target - c.start} to prefill and {left} budget left it is owed {owed}")
        left -= c.n
    return None


# -- memory, re-read for shared blocks ----------------------------------------------------------------


def blocks(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """BLOCKS, judged on the plan: the new blocks and the free cached blocks hits take back fit the free ones."""
    if f.short:
        return f"the plan needs {f.short} block(s) more than the {s.free_blocks} free after this step's preemptions"
    return None


def watermark(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """WATERMARK, judged on the plan: each admission, its hit and its chunk leave at least `watermark` free."""
    for c, free in zip(f.admitted, f.free_after, strict=True):
        if free < s.pool.watermark:
            return (f"admitting rid {c.track.rid} (a hit of {f.expected[c.track.rid][0]} block(s), a chunk of {c.n}) "
                    f"leaves {free} block(s) free; the watermark is {s.pool.watermark}")
    return None


def work_conserving(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """WORK-CONSERVING, prefix reading: the paged reading, the waiting head's chunk taken after its hit
    and its hit's free cached blocks counted against the watermark."""
    unused = s.config.token_budget - f.num_tokens
    if unused <= 0:
        return None
    found = _owed_unused(s, f, unused)
    if found is not None or f.preempted or f.head is None or len(s.running) + len(f.admitted) >= s.config.max_seqs:
        return found
    head, num, revived = f.head
    bs = s.pool.block_size
    chunk = min(head.target - num * bs, unused)
    left = f.free_end - revived - (blocks_for(num * bs + chunk, bs) - num)
    if left >= s.pool.watermark:
        return (f"{unused} budget token(s) unused while waiting rid {head.rid} fits: a hit of {num} block(s) and a "
                f"chunk of {chunk} leave {left} free block(s), watermark {s.pool.watermark}")
    return None


def _owed_unused(s: PrefixShadow, f: PrefixFacts, unused: int) -> str | None:
    """The paged reading's first two parts: every ready request decoded, every partial prefill its due."""
    if len(f.decodes) < s.num_ready:
        return f"{unused} budget token(s) unused while a ready request got no decode"
    for track, owed, _ in paged.owed_chunks(s, f):
        got = next((c.n for c in f.chunks if c.track is track), 0)
        if got < owed:
            return f"{unused} budget token(s) unused while partial rid {track.rid} got {got} of the {owed} it is owed"
    return None


def preempt_order(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """PREEMPT-ORDER, prefix reading: the paged rule, a victim freeing only the blocks no other running
    request holds."""
    if not f.preempted:
        return None
    misordered = paged.not_newest_first(s, f)
    if misordered:
        return misordered
    need = sum(1 for t in s.running.values() if t.is_ready and s.needs_block(t))
    cache, free = s.cache.copy(), s.free_blocks
    for track in f.preempted:
        if need <= free:
            return f"rid {track.rid} was preempted while the decodes needed {need} new block(s) and {free} were free"
        copy = PrefixTrack(track.request, track.num_computed, keys=track.keys, shared=list(track.shared))  # type: ignore[attr-defined]
        free += release(cache, copy, s.pool.block_size)
        if track.is_ready and s.needs_block(track):
            need -= 1
    return None


# -- the cache, as the scheduler shows it -------------------------------------------------------------


def free_at_zero(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """FREE-AT-ZERO, once the step is applied: a scheduler that shows its free cached blocks (`cached`)
    shows none that a running request still holds: a block is freed only when its last holder lets it go."""
    if f.reported_cached is None:
        return None
    held = set(s.cache.refs)
    for t in s.running.values():
        track = cast(PrefixTrack, t)
        held.update(track.key(j)[0] for j in range(len(track.keys), track.num_computed // s.pool.block_size))
    for key in f.reported_cached:
        if key in held:
            return f"the scheduler shows block {key!r:.40} free in its cache while a running request holds it"
    return None


def evict_lru(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """EVICT-LRU, once the step is applied: the free cached blocks are the contract's, in the order they
    were freed: a new block is an empty one while any is left, else the least recently freed cached one."""
    if f.reported_cached is None:
        return None
    expected = list(s.cache.lru)
    shown = list(f.reported_cached)
    if shown != expected:
        first = next((i for i, (a, b) in enumerate(zip(shown, expected, strict=False)) if a != b),
                     min(len(shown), len(expected)))
        return (f"the scheduler's free cached blocks are {len(shown)}, the contract's {len(expected)}; they differ "
                f"from position {first} (least recently freed first)")
    return None


def evict_victims(s: PrefixShadow, f: PrefixFacts) -> str | None:
    """EVICT-LRU, judged on the plan: the scheduler's free cached blocks after schedule() (its `cached`,
    where shown) hold none the contract evicted for this plan while missing one it keeps."""
    if f.planned_cached is None or not f.evicted:
        return None
    shown = set(f.planned_cached)
    wrong = [key for key in f.evicted if key in shown]
    lost = [key for key in f.kept if key not in shown]
    if wrong and lost:
        return (f"the plan evicted a cached block freed after one it kept ({len(wrong)} kept that least recently "
                f"freed first would evict, {len(lost)} evicted that it would keep)")
    return None


# -- premises: what a rule bites on, where not every step -------------------------------------------


def hits_claimed(s: PrefixShadow, f: PrefixFacts) -> int:
    """Admissions the plan says hold cached tokens (SHARED-READONLY and HIT-SAME-TOKENS judge a claim)."""
    return sum(1 for n in f.claimed.values() if n > 0)


def hits_expected(s: PrefixShadow, f: PrefixFacts) -> int:
    """Admissions whose leading blocks the contract's cache holds (CACHED-NOT-PREFILLED judges their claim)."""
    return sum(1 for num, _ in f.expected.values() if num > 0)


def evictions_shown(s: PrefixShadow, f: PrefixFacts) -> int:
    """Cached blocks the contract evicts for a plan after which the scheduler shows its cache (EVICT-LRU's
    eviction part)."""
    return len(f.evicted) if f.planned_cached is not None else 0


HITS_CLAIMED = Premise("hits", "no admission held cached tokens", hits_claimed)
HITS_EXPECTED = Premise("cached prefixes", "no admission's leading blocks were cached", hits_expected)
CHARGED = Premise("hits", "no admission held cached tokens, so only uncached first chunks were judged", hits_claimed,
                  whole=False)
EVICTED = Premise("evictions", "no cached block was evicted while the scheduler showed its cache, so which one "
                  "is evicted was not judged", evictions_shown, whole=False)


# -- the registry ------------------------------------------------------------------------------------

BEFORE_PREEMPTION: dict[str, PrefixCheck] = {"PREEMPT-BOUND": paged.preempt_bound, "PREEMPT-ORDER": preempt_order}
AFTER_STEP: dict[str, PrefixCheck] = {
    "CANCEL": paged.cancel_shown, "TOKENS-KEPT": paged.tokens_shown, "PREEMPT-ORDER": paged.line_shown,
    "FREE-AT-ZERO": free_at_zero, "EVICT-LRU": evict_lru, "BLOCKS": paged.blocks_shown,
}


def reread(rule_id: str, check: PrefixCheck) -> Rule:
    """The paged rule `rule_id`, its statement kept, judged by the prefix reading `check`."""
    rule = paged.PAGED_BY_ID[rule_id]
    return Rule(rule.id, rule.kind, rule.statement, plan_check=prefix(check), done_check=rule.done_check,
                design=rule.design, premise=rule.premise)


def new(rule_id: str, kind: Kind, statement: str, check: PrefixCheck | None = None,
        premise: Premise | None = None) -> Rule:
    return Rule(rule_id, kind, statement, plan_check=prefix(check) if check else None, design=DESIGN,
                premise=premise)


P = paged.PAGED_BY_ID
PREFIX_RULES: tuple[Rule, ...] = (
    P["PREEMPT-BOUND"],
    P["PREEMPT-ORDER"],
    new("EVICT-LRU", Kind.POLICY, "a new block is an empty one while any is left, else the cached free block "
        "freed least recently; a request lets its blocks go last block first.", evict_victims, EVICTED),
    new("SHARED-READONLY", Kind.SAFETY, "a block held from the cache is never written: a hit is whole blocks, "
        "and every chunk computes into blocks its request alone holds.", shared_readonly, HITS_CLAIMED),
    new("HIT-SAME-TOKENS", Kind.SAFETY, "a request holds from the cache only blocks whose tokens and the "
        "prefix before them are its own, and never its last prefill token: its first token (or, after a "
        "preemption, its next) still comes from the chunk that completes its prefill.", hit_same_tokens,
        HITS_CLAIMED),
    new("CACHED-NOT-PREFILLED", Kind.SAFETY, "an admission holds the longest run of its leading blocks that "
        "are cached (up to its last prefill token) and prefills only the rest.", cached_not_prefilled,
        HITS_EXPECTED),
    new("CACHED-NOT-CHARGED", Kind.POLICY, "cached tokens cost no budget: an admission's first chunk is "
        "min(prefill after its hit, budget left).", cached_not_charged, CHARGED),
    P["BUDGET"], P["ONE-ENTRY"], P["SLOTS"],
    reread("BLOCKS", blocks),
    reread("WATERMARK", watermark),
    P["RECOMPUTE"], P["FIRST-TOKEN"], P["TOKENS-KEPT"], P["CANCEL"],
    new("FREE-AT-ZERO", Kind.SAFETY, "a block shared by requests returns to the free pool only when the last "
        "of them lets it go (at finish, stop, cancel or preemption); a free full block stays cached until "
        "evicted, and only a free block is evicted."),
    P["NEVER-FIT"], P["PROGRESS"], P["FCFS"], P["DECODE-FIRST"], P["PARTIAL-NEXT"],
    reread("WORK-CONSERVING", work_conserving),
)
PREFIX_RULE_IDS: tuple[str, ...] = tuple(r.id for r in PREFIX_RULES)
PREFIX_BY_ID: dict[str, Rule] = {r.id: r for r in PREFIX_RULES}
NEW_IDS: tuple[str, ...] = tuple(r.id for r in PREFIX_RULES if r.design == DESIGN)


def select(ids: object = None) -> tuple[Rule, ...]:
    """The prefix rules named in `ids` (all when None), in registry order; unknown IDs raise naming them."""
    return select_from(PREFIX_RULES, ids, "prefix rule")
