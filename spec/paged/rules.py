"""The rules of the paged design, by ID: the registry the paged monitor, the kit's `paged` profile,
the paged state machine and the paged model check iterate over.

Shared rules keep their IDs and their predicates from `rules` (BUDGET, ONE-ENTRY, SLOTS, FIRST-TOKEN,
NEVER-FIT's judgement, PROGRESS, FCFS, DECODE-FIRST); each is read against the shadow as it stands
after this step's preemptions, so a preempted request is waiting, not ready or partial, when they
judge the plan. PARTIAL-NEXT and WORK-CONSERVING are re-read for blocks (a chunk is also limited by
the blocks it can have; admission is also limited by the watermark and never happens in a step that
preempted). KV, PREFILL-ONCE and TOKENS are the reservation design's; the paged design's BLOCKS,
RECOMPUTE and TOKENS-KEPT replace them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from ..reservation import rules as shared
from ..rule import Kind, Premise, Rule, StepCheck, select_from
from .shadow import PagedChunk, PagedFacts, PagedShadow, PagedTrack, blocks_for

__all__ = ["PAGED_BY_ID", "PAGED_RULES", "PAGED_RULE_IDS", "Rule", "select"]

PagedCheck = Callable[[PagedShadow, PagedFacts], "str | None"]


def paged(check: PagedCheck) -> StepCheck:
    """A paged predicate in a `Rule`: the shared rules read the paged shadow and facts by the names they
    share with the reservation design's (config, running, waiting, prefilling, ready(), the entries)."""
    return cast(StepCheck, check)


DESIGN = "paged"


# -- memory -----------------------------------------------------------------------------------------


def decode_blocks(s: PagedShadow, f: PagedFacts) -> int:
    """New blocks the plan's decodes compute into, over what their requests hold."""
    bs = s.pool.block_size
    return sum(blocks_for(track.num_computed + n, bs) - blocks_for(track.num_computed, bs) for track, n in f.decodes)


def chunk_blocks(c: PagedChunk, bs: int) -> int:
    """New blocks chunk `c` computes into, over what its request holds."""
    return blocks_for(c.start + c.n, bs) - blocks_for(c.start, bs)


def plan_blocks(s: PagedShadow, f: PagedFacts) -> int:
    """New blocks the plan computes into, over what its requests hold (the shadow after preemption)."""
    bs = s.pool.block_size
    more = decode_blocks(s, f)
    for c in f.chunks + f.admitted:
        more += chunk_blocks(c, bs)
    return more


def blocks(s: PagedShadow, f: PagedFacts) -> str | None:
    """BLOCKS, judged on the plan: the blocks running requests hold after the step fit the pool."""
    more = plan_blocks(s, f)
    if more > s.free_blocks:
        return (f"the plan computes into {more} new block(s); {s.free_blocks} of {s.pool.num_blocks} are free "
                "after this step's preemptions")
    return None


def blocks_shown(s: PagedShadow, f: PagedFacts) -> str | None:
    """BLOCKS, once the step is done and applied (`s` is the state after it): a scheduler that shows
    `free_blocks` shows the pool less ceil(tokens in KV / block_size) for each running request, every
    ended, cancelled and preempted request's blocks back."""
    if f.reported_free_blocks is None or f.reported_free_blocks == s.free_blocks:
        return None
    ended = [t.rid for t in f.ended]
    return (f"the scheduler shows free_blocks={f.reported_free_blocks} after the step; the running requests' "
            f"ceil(tokens in KV / {s.pool.block_size}) leave {s.free_blocks} free (ended with this step: {ended})")


def watermark(s: PagedShadow, f: PagedFacts) -> str | None:
    """WATERMARK, judged on the plan: each admission's first chunk leaves at least `watermark` blocks
    free, counting the decodes, the partial chunk and the admissions before it."""
    bs = s.pool.block_size
    free = s.free_blocks - decode_blocks(s, f)
    for c in f.chunks:
        free -= chunk_blocks(c, bs)
    for c in f.admitted:
        free -= blocks_for(c.n, bs)
        if free < s.pool.watermark:
            return (f"admitting rid {c.track.rid} with a chunk of {c.n} leaves {free} block(s) free; the "
                    f"watermark is {s.pool.watermark}")
    return None


# -- tokens across preemption ------------------------------------------------------------------------


def recompute(s: PagedShadow, f: PagedFacts) -> str | None:
    """RECOMPUTE, judged on the plan: every chunk continues where this residency's KV ends and stays
    within its prefill (prompt_len, plus the tokens emitted before a preemption)."""
    for c in f.chunks + f.admitted:
        if c.start + c.n > c.track.target:
            return (f"rid {c.track.rid} gets a chunk of {c.n} at position {c.start}, past the end of its "
                    f"{c.track.target}-token prefill (prompt {c.track.request.prompt_len} + "
                    f"{c.track.target - c.track.request.prompt_len} emitted)")
    return None


def recompute_token(s: PagedShadow, f: PagedFacts) -> str | None:
    """RECOMPUTE, once the step is done: a re-admitted request's next token comes from the chunk that
    completes its prompt plus emitted tokens, and from no other chunk."""
    for c in f.recomputes:
        rid = c.track.rid
        if c.completes and rid not in f.emitted_set:
            return f"rid {rid}'s recompute completes ({c.track.target} positions) but emitted no token"
        if not c.completes and rid in f.emitted_set:
            return (f"rid {rid} emitted after recompute positions [{c.start}, {c.start + c.n}) of "
                    f"{c.track.target}: before its prompt and {c.track.num_emitted} emitted tokens were back in KV")
    return None


def tokens_kept(s: PagedShadow, f: PagedFacts) -> str | None:
    """TOKENS-KEPT, once the step is done: one token per decode, a decode is n=1, at most one token a
    rid a step, none from a rid not planned (the count per request, exactly max_new unless it stops
    or is cancelled, is kept by the shadow across preemptions: a request planned after it ended is
    reported under this rule by the observer)."""
    return shared.step_tokens(f)


def tokens_shown(s: PagedShadow, f: PagedFacts) -> str | None:
    """TOKENS-KEPT, once the step is applied: the requests a scheduler shows (waiting or running) are
    the live ones, so it ends a request exactly on its max_new-th token (or its stop), not before or after."""
    if f.reported_live is None:
        return None
    live = set(s.tracks)
    extra = sorted(r for r in f.reported_live - live if not s.was_cancelled(r))
    if extra:
        rid = extra[0]
        ending = s.ended.get(rid)
        return (f"the scheduler still holds rid {rid}, which ended at step {ending and ending.step} "
                "(every token emitted, or stopped)")
    missing = sorted(live - f.reported_live)
    if missing:
        t = s.tracks[missing[0]]
        return f"the scheduler dropped rid {t.rid} after {t.num_emitted} of its {t.request.max_new} tokens"
    return None


def cancel_shown(s: PagedShadow, f: PagedFacts) -> str | None:
    """CANCEL, once the step is applied: a scheduler that shows its requests holds no cancelled one."""
    if f.reported_live is None:
        return None
    held = sorted(r for r in f.reported_live - set(s.tracks) if s.was_cancelled(r))
    if held:
        return f"the scheduler still holds rid {held[0]} after its cancel took effect"
    return None


# -- preemption --------------------------------------------------------------------------------------


def preempt_bound(s: PagedShadow, f: PagedFacts) -> str | None:
    """PREEMPT-BOUND, judged on the plan (before its preemptions apply): the oldest running request is
    never preempted, no request more often than the work ahead of it when it arrived (the steps before
    it is the oldest), and nothing is preempted while every running request's peak fits the pool."""
    if not f.preempted:
        return None
    oldest = next(iter(s.running))
    if any(t.rid == oldest for t in f.preempted):
        return f"the oldest running request, rid {oldest}, was preempted"
    for t in f.preempted:
        if t.num_preemptions + 1 > t.ahead_work:
            return (f"rid {t.rid} is preempted for the {t.num_preemptions + 1}th time; the requests ahead of it "
                    f"when it arrived held {t.ahead_work} steps of work, the most times it can be preempted")
    peaks = sum(s.pool.peak(t.request) for t in s.running.values())
    if peaks <= s.pool.num_blocks:
        return (f"rid(s) {[t.rid for t in f.preempted]} were preempted while the running requests' peaks, "
                f"{peaks} blocks, fit the pool of {s.pool.num_blocks}")
    return None


def not_newest_first(s: PagedShadow, f: PagedFacts) -> str | None:
    """PREEMPT-ORDER's first part (every design that preempts): the victims are the newest running
    requests, newest first."""
    newest = list(reversed(s.running.values()))[: len(f.preempted)]
    if [t.rid for t in f.preempted] != [t.rid for t in newest]:
        return (f"preempted {[t.rid for t in f.preempted]}; the newest running requests, newest first, are "
                f"{[t.rid for t in newest]}")
    return None


def preempt_order(s: PagedShadow, f: PagedFacts) -> str | None:
    """PREEMPT-ORDER, judged on the plan (before its preemptions apply): the victims are the newest
    running requests, newest first, each taken only while the decodes still needed more new blocks
    than were free; a step that preempts admits nothing."""
    if not f.preempted:
        return None
    misordered = not_newest_first(s, f)
    if misordered:
        return misordered
    need = sum(1 for t in s.running.values() if t.is_ready and s.needs_block(t))
    free = s.free_blocks
    for track in f.preempted:
        if need <= free:
            return (f"rid {track.rid} was preempted while the decodes needed {need} new block(s) and {free} "
                    "were free")
        free += s.held(track)
        if track.is_ready and s.needs_block(track):
            need -= 1
    return None


def preempt_admits(s: PagedShadow, f: PagedFacts) -> str | None:
    """PREEMPT-ORDER, judged on the plan after its preemptions: nothing is admitted in a step that
    preempted, and the admissions, in plan order, take the line from its head while a preempted
    request is there: none ahead of it, even in the same step."""
    if f.preempted and f.admitted:
        return f"the step preempted {[t.rid for t in f.preempted]} and admitted {[c.track.rid for c in f.admitted]}"
    for c, t in zip(f.admitted, s.waiting, strict=False):  # admissions are at most the line
        if c.track is not t and t.num_preemptions:
            return f"admitted rid {c.track.rid} while preempted rid {t.rid}, ahead of it in the line, waited"
    return None


def line_shown(s: PagedShadow, f: PagedFacts) -> str | None:
    """PREEMPT-ORDER, once the step is applied: a scheduler that shows its waiting line shows the
    contract's, preempted requests at its head in arrival order."""
    if f.reported_line is None or not f.preempted:
        return None
    line = [t.rid for t in s.waiting]
    if f.reported_line != line:
        victims = [t.rid for t in f.preempted]
        return f"after preempting {victims} the scheduler's line is {f.reported_line[:8]}; it is {line[:8]}"
    return None


# -- the policy, re-read for blocks ------------------------------------------------------------------


def owed_chunks(s: PagedShadow, f: PagedFacts) -> list[tuple[PagedTrack, int, int]]:
    """(track, chunk owed, budget left at its turn) for each partial prefill in admission order: the
    chunk is min(remaining, budget left, tokens its held and the free blocks can take)."""
    bs = s.pool.block_size
    free = s.free_blocks - decode_blocks(s, f)
    left = s.config.token_budget - f.num_decode_tokens
    out: list[tuple[PagedTrack, int, int]] = []
    for track in s.prefilling.values():
        room = (s.held(track) + max(free, 0)) * bs - track.num_computed
        owed = max(0, min(track.num_remaining_prompt, left, room))
        out.append((track, owed, left))
        left -= owed
        free -= blocks_for(track.num_computed + owed, bs) - s.held(track)
    return out


def partial_next(s: PagedShadow, f: PagedFacts) -> str | None:
    """PARTIAL-NEXT, paged reading: each partial prefill gets min(remaining, budget left, room in its
    blocks and the free ones), oldest first, before any admission."""
    for track, owed, left in owed_chunks(s, f):
        got = next((c.n for c in f.chunks if c.track is track), 0)
        if got != owed:
            return (f"partial rid {track.rid} ({track.num_remaining_prompt} prefill tokens left, {left} budget "
                    f"left, {s.free_blocks} free block(s)) got {got}; it is owed {owed}")
    return None


def work_conserving(s: PagedShadow, f: PagedFacts) -> str | None:
    """WORK-CONSERVING, paged reading: budget is left unused only when every ready request is decoded,
    every partial prefill got what budget and blocks allow, and the waiting head is blocked (no slot,
    its first chunk would cross the watermark) or absent, or the step preempted."""
    unused = s.config.token_budget - f.num_tokens
    if unused <= 0:
        return None
    if len(f.decodes) < s.num_ready:
        return f"{unused} budget token(s) unused while a ready request got no decode"
    for track, owed, _ in owed_chunks(s, f):
        got = next((c.n for c in f.chunks if c.track is track), 0)
        if got < owed:
            return f"{unused} budget token(s) unused while partial rid {track.rid} got {got} of the {owed} it is owed"
    if f.preempted:
        return None
    head: PagedTrack | None = shared.waiting_head(s, f)
    if head is None or len(s.running) + len(f.admitted) >= s.config.max_seqs:
        return None
    free = s.free_blocks - plan_blocks(s, f)
    chunk = min(head.target, unused)
    if free - blocks_for(chunk, s.pool.block_size) >= s.pool.watermark:
        return (f"{unused} budget token(s) unused while waiting rid {head.rid} fits: a chunk of {chunk} leaves "
                f"{free - blocks_for(chunk, s.pool.block_size)} free block(s), watermark {s.pool.watermark}")
    return None


# -- premises: what a rule bites on, where not every step -------------------------------------------


def preemptions(s: PagedShadow, f: PagedFacts) -> int:
    """The requests the step preempted (PREEMPT-BOUND and PREEMPT-ORDER judge nothing without one)."""
    return len(f.preempted)


def readmissions(s: PagedShadow, f: PagedFacts) -> int:
    """The preempted requests the step re-admitted (RECOMPUTE's recompute part bites on them)."""
    return sum(1 for c in f.admitted if c.is_recompute)


PREEMPTED = Premise("preemptions", "no run preempted", preemptions)
READMITTED = Premise("re-admissions", "no preempted request was re-admitted, so only first prefills were judged",
                     readmissions, whole=False)


# -- the registry ------------------------------------------------------------------------------------

# Judged on the plan before its preemptions apply to the shadow (the others see the shadow after them).
BEFORE_PREEMPTION: dict[str, PagedCheck] = {"PREEMPT-BOUND": preempt_bound, "PREEMPT-ORDER": preempt_order}
# Judged once the step is applied: what the scheduler shows against the shadow after the step.
AFTER_STEP: dict[str, PagedCheck] = {"CANCEL": cancel_shown, "TOKENS-KEPT": tokens_shown, "PREEMPT-ORDER": line_shown,
              "BLOCKS": blocks_shown}

# The monitor checks them in this order and reports the first broken one.

PAGED_RULES: tuple[Rule, ...] = (
    Rule("PREEMPT-BOUND", Kind.LIVENESS,
         "the oldest running request is never preempted; a request is preempted at most sum(prompt_len + "
         "max_new) times over the live requests ahead of it when it arrived; nothing is preempted while every "
         "running request's peak, ceil((prompt_len + max_new - 1) / block_size) blocks, fits the pool together.",
         design=DESIGN, premise=PREEMPTED),
    Rule("PREEMPT-ORDER", Kind.POLICY,
         "when a step's decodes need more new blocks than are free, the newest running requests are preempted, "
         "newest first, only while they still do not fit; victims wait at the head of the line in arrival "
         "order and are re-admitted before any later arrival; a step that preempts admits nothing.",
         plan_check=paged(preempt_admits), design=DESIGN, premise=PREEMPTED),
    shared.BY_ID["BUDGET"],
    shared.BY_ID["ONE-ENTRY"],
    shared.BY_ID["SLOTS"],
    Rule("BLOCKS", Kind.SAFETY,
         "blocks held never exceed the pool; each running request holds exactly ceil(tokens in KV / "
         "block_size) blocks, taken as its tokens are computed, all returned when it finishes, stops, is "
         "cancelled or preempted; at the end every block is free.",
         plan_check=paged(blocks), design=DESIGN),
    Rule("WATERMARK", Kind.SAFETY,
         "the waiting head is admitted only if its first chunk leaves at least `watermark` blocks free.",
         plan_check=paged(watermark), design=DESIGN),
    Rule("RECOMPUTE", Kind.SAFETY,
         "each residency prefills its prompt plus the tokens emitted before it was preempted, in contiguous "
         "chunks from position 0, each position once; the chunk that completes it emits the next token.",
         plan_check=paged(recompute), done_check=paged(recompute_token), design=DESIGN, premise=READMITTED),
    shared.BY_ID["FIRST-TOKEN"],
    Rule("TOKENS-KEPT", Kind.SAFETY,
         "each request emits exactly max_new tokens unless stopped or cancelled, however often it is "
         "preempted: one per decode, none twice, none from a request not planned or ended.",
         done_check=paged(tokens_kept), design=DESIGN),
    Rule("CANCEL", Kind.SAFETY,
         "a cancelled request is never planned after its cancel takes effect (at once, or when the pending "
         "plan completes) and its blocks are free from then.",
         design=DESIGN),
    Rule("NEVER-FIT", Kind.INPUT,
         "add() rejects a request whose peak ceil((prompt_len + max_new - 1) / block_size) exceeds the pool "
         "less the watermark, or whose fields are invalid (or whose rid is taken by a request that has not "
         "ended), with ValueError or TypeError, and nothing else changes; it accepts every other request (the "
         "rid of an ended request it may accept or refuse)."),
    shared.BY_ID["PROGRESS"],
    shared.BY_ID["FCFS"],
    shared.BY_ID["DECODE-FIRST"],
    Rule("PARTIAL-NEXT", Kind.POLICY,
         "partial prefills take the budget left after decodes before any admission, oldest first, each "
         "min(remaining prefill, budget left, what its blocks and the free blocks hold).",
         plan_check=paged(partial_next)),
    Rule("WORK-CONSERVING", Kind.POLICY,
         "budget is left unused only when every ready request is decoded, every partial prefill got what "
         "budget and blocks allow, and the waiting head is blocked (no slot, or its first chunk would cross "
         "the watermark), absent, or the step preempted.",
         plan_check=paged(work_conserving)),
)
PAGED_RULE_IDS: tuple[str, ...] = tuple(r.id for r in PAGED_RULES)
PAGED_BY_ID: dict[str, Rule] = {r.id: r for r in PAGED_RULES}
SHARED_IDS: tuple[str, ...] = tuple(r.id for r in PAGED_RULES if r.id in shared.BY_ID)
NEW_IDS: tuple[str, ...] = tuple(r.id for r in PAGED_RULES if r.design == DESIGN)


def select(ids: object = None) -> tuple[Rule, ...]:
    """The paged rules named in `ids` (all when None), in registry order; unknown IDs raise naming them."""
    return select_from(PAGED_RULES, ids, "paged rule")
