"""Why a waiting request was not admitted in a step, in the contract's terms.

Admission is first come first served (FCFS): only the head of the queue can be admitted, and it is
admitted when a slot is free (SLOTS), its whole reservation fits the free KV (KV) and budget is left
(WORK-CONSERVING). A request behind the head waits for the head, whatever it needs itself.
"""

from __future__ import annotations

from stallfree.spec import Shadow, StepFacts, Track

NO_SLOT = "no slot"
NO_KV = "not enough free KV"
NO_BUDGET = "no budget left"
PASSED_OVER = "passed over (it fits)"  # only a scheduler that breaks WORK-CONSERVING leaves one so
REASONS = (NO_SLOT, NO_KV, NO_BUDGET, PASSED_OVER)


def behind(rid: int) -> str:
    return f"behind r{rid}"


def head_reason(shadow: Shadow, facts: StepFacts, head: Track) -> str:
    """Why `head`, the first waiting request this step did not admit, still waits after the plan."""
    cfg = shadow.config
    if len(shadow.running) + len(facts.admitted) >= cfg.max_seqs:
        return NO_SLOT
    if head.request.reservation > shadow.free_kv - facts.admitted_reservation:
        return NO_KV
    if facts.num_tokens >= cfg.token_budget:
        return NO_BUDGET
    return PASSED_OVER


def reasons(shadow: Shadow, facts: StepFacts, limit: int | None = None) -> dict[int, str]:
    """rid -> why it waits, for every request still waiting after the plan of `facts` (the first
    `limit` of them, when given: a step then costs what it shows, not the whole line), judged on
    `shadow`, the state before the step."""
    admitted = {c.track.rid for c in facts.admitted}
    out: dict[int, str] = {}
    head: Track | None = None
    for track in shadow.waiting:
        if track.rid in admitted:
            continue
        if limit is not None and len(out) >= limit:
            break
        if head is None:
            head = track
            out[track.rid] = head_reason(shadow, facts, track)
        else:
            out[track.rid] = behind(head.rid)
    return out
