"""The paged design's state invariants, shaped like `invariants.INVARIANTS`: facts about one state
of the paged shadow (and what a paged scheduler shows), which the paged model check and the paged
state machine judge between actions.

LONE-BLOCK is the theorem NEVER-FIT exists for: a request running alone always gets its next block,
so the preemption loop never has to take the last running request (nor can a request preempt itself
into a livelock).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from .. import invariant
from ..invariant import Invariant, Origin
from ..reservation import invariants
from .shadow import PagedShadow, blocks_for


def types(s: PagedShadow, v: Any) -> str | None:
    """TYPES: each request in one place, counters in range; a ready request has its prefill done and
    holds prompt + emitted - 1 tokens in KV; a waiting one holds nothing; counts add up."""
    for t in s.waiting:
        if t.num_computed or t.admitted_at is not None or t.rid in s.running:
            return f"waiting rid {t.rid} holds {t.num_computed} KV tokens or is running"
        if t.target != t.request.prompt_len + t.num_emitted:
            return f"waiting rid {t.rid}'s prefill is {t.target}, not prompt + emitted"
    num_ready = 0
    for rid, t in s.running.items():
        r = t.request
        over = t.num_computed >= t.target if rid in s.prefilling else t.num_computed < t.target
        if t.num_computed < 0 or over or not 0 <= t.num_emitted < r.max_new:
            return f"rid {rid}: computed {t.num_computed} of {t.target}, emitted {t.num_emitted} of {r.max_new}"
        if t.is_ready == (rid in s.prefilling):
            return f"rid {rid} is ready={t.is_ready}, partial={rid in s.prefilling}, {t.num_computed} of {t.target}"
        if t.is_ready and t.num_computed != r.prompt_len + t.num_emitted - 1:
            expected = r.prompt_len + t.num_emitted - 1
            return f"ready rid {rid} holds {t.num_computed} KV tokens; prompt + emitted - 1 = {expected}"
        num_ready += t.is_ready
    if num_ready != s.num_ready:
        return f"{num_ready} running requests are ready; the shadow counts {s.num_ready}"
    return None


def blocks(s: PagedShadow, v: Any) -> str | None:
    """BLOCKS: held blocks (ceil(tokens in KV / block_size) each) never exceed the pool, the free count is
    the pool less them, a scheduler that shows free_blocks shows that; idle, every block is free."""
    held = sum(s.held(t) for t in s.running.values())
    if held > s.pool.num_blocks or s.free_blocks != s.pool.num_blocks - held:
        return f"running requests hold {held} blocks of {s.pool.num_blocks}; the shadow counts {s.free_blocks} free"
    shown = getattr(v, "free_blocks", None)
    if type(shown) is int and shown != s.free_blocks:
        return f"the scheduler shows free_blocks={shown}; the running requests leave {s.free_blocks}"
    return None


def line(s: PagedShadow, v: Any) -> str | None:
    """LINE: the running requests (admission order) then the waiting ones are in arrival order, with rids
    given in arrival order: preempted requests wait ahead of every later arrival."""
    rids = [*s.running, *(t.rid for t in s.waiting)]
    if rids != sorted(rids):
        return f"running then waiting is {rids[:12]}: not in arrival order"
    return None


def one_partial(s: PagedShadow, v: Any) -> str | None:
    """ONE-PARTIAL: at most one request is in prefill (as in the reservation design), and it is the
    newest running one."""
    found = invariants.one_partial(cast(Any, s), v)
    if found is None and s.prefilling and next(iter(s.prefilling)) != next(reversed(s.running)):
        return f"partial rid {next(iter(s.prefilling))} is not the newest running request"
    return found


def lone_block(s: PagedShadow, v: Any) -> str | None:
    """LONE-BLOCK: the oldest running request can take its next token's block even if every other request
    were preempted: its held blocks plus one new one, if its next token needs one, fit the pool."""
    if not s.running:
        return None
    oldest = next(iter(s.running.values()))
    after = blocks_for(oldest.num_computed + 1, s.pool.block_size)
    if after > s.pool.num_blocks:
        return f"rid {oldest.rid} alone would need {after} blocks for its next token; the pool has {s.pool.num_blocks}"
    return None


def paged(check: Callable[[PagedShadow, Any], str | None]) -> Any:
    """A paged state check in an `Invariant` (whose type names the reservation shadow)."""
    return cast(Any, check)


PAGED_INVARIANTS: tuple[Invariant, ...] = (
    Invariant("TYPES", Origin.STATED, "every request is in one place with its counters in range; a ready "
              "request holds prompt + emitted - 1 tokens in KV, a waiting one none.", paged(types)),
    Invariant("BLOCKS", Origin.STATED, "held blocks never exceed the pool; free blocks are the pool less the "
              "held ones, as the scheduler shows them.", paged(blocks), reads_scheduler=True),
    Invariant("LINE", Origin.DERIVED, "running then waiting requests are in arrival order.", paged(line),
              premises=("FCFS", "PREEMPT-ORDER")),
    Invariant("ONE-PARTIAL", Origin.DERIVED, "at most one request is in prefill, the newest running one.",
              paged(one_partial), premises=("PARTIAL-NEXT", "WORK-CONSERVING", "WATERMARK")),
    Invariant("READY-WITHIN-BUDGET", Origin.DERIVED, "ready requests never outnumber the budget.",
              invariants.ready_within_budget, premises=("BUDGET", "DECODE-FIRST", "TOKENS-KEPT")),
    Invariant("LONE-BLOCK", Origin.DERIVED, "the oldest running request's next block always fits the pool.",
              paged(lone_block), premises=("NEVER-FIT", "BLOCKS")),
)


def broken(shadow: PagedShadow, scheduler: Any) -> tuple[str, str] | None:
    """The first paged invariant the state breaks, as (ID, what happened), or None."""
    return invariant.broken(cast(Any, shadow), scheduler, PAGED_INVARIANTS)
