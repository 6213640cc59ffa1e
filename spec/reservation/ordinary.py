"""The ordinary step, judged in one pass: a shortcut the monitor takes before its checks.

The monitor judges a step by calling each rule's check in turn (`watch.judge`), about fifteen calls a
step, most of them reading the same few fields of the facts. `plan_holds` and `done_holds` read
those fields once and answer only "every plan (done) check of `RULES` returns None here": True
when they can show it, False when they cannot. They never name a rule: on False the monitor runs
the checks one by one, as it always did, and the first broken rule is named by its own check. So
a shortcut that declines too often costs time, never a verdict; one that said True where a check
reports a message would hide a violation, which tests/test_monitor_ordinary.py looks for on every
step of the faulty schedulers' plays.

Each condition below is the path on which one rule's check returns None, read through the same
fields and properties the check reads (a variant's shadow or track that overrides one is read the
same way); where a rule's own path is long (a partial prompt owed nothing, admissions out of
line order) the shortcut declines rather than follow it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .facts import StepFacts
from .rules import RULES
from .shadow import Shadow

Holds = Callable[[Shadow, StepFacts], bool]


def plan_holds(s: Shadow, f: StepFacts) -> bool:
    """True only if every plan check of RULES holds on plan facts `f` in state `s` (False: not shown)."""
    cfg = s.config
    budget = cfg.token_budget
    num_ready = s.num_ready
    admitted = f.admitted
    if (f.num_tokens > budget or f.duplicates or f.first_bad_n is not None or f.ended_planned  # BUDGET,
            or num_ready > budget or len(f.decodes) != num_ready  # ONE-ENTRY, CANCEL; DECODE-FIRST: all decoded;
            or len(s.running) + len(admitted) > cfg.max_seqs or s.free_kv < f.admitted_reservation):  # SLOTS, KV
        return False  # (SLOTS and KV with no admission too: a step before may have broken them unchecked)
    if not f.plan and not s.is_idle:
        return False  # PROGRESS
    unused = budget - f.num_tokens
    for chunk in f.prefills:
        track = chunk.track
        end = chunk.start + chunk.n
        if end > track.request.prompt_len:
            return False  # PREFILL-ONCE
        if unused > 0 and end < track.target:
            return False  # WORK-CONSERVING: budget unused while a prompt had more to run (Chunk.completes)
    prefilling = s.prefilling
    if prefilling:  # PARTIAL-NEXT: each partial, oldest first, its chunk in place, of min(remaining, left) > 0
        chunks = f.chunks
        if len(chunks) != len(prefilling):  # (one owed nothing, the budget spent: not shown here)
            return False
        left = budget - f.num_decode_tokens
        for i, track in enumerate(prefilling.values()):
            chunk = chunks[i]
            expected = min(track.num_remaining_prompt, left)
            if expected <= 0 or chunk.track is not track or chunk.n != expected:
                return False
            left -= expected
    waiting = s.waiting
    num_admitted = len(admitted)
    if admitted:  # FCFS: the admissions are the head of the line, in line order (any other: not shown)
        if len(waiting) < num_admitted:
            return False
        for chunk, track in zip(admitted, waiting, strict=False):
            if chunk.track is not track:
                return False
    if unused <= 0 or len(waiting) <= num_admitted:
        return True
    # WORK-CONSERVING with budget unused: the head past the admissions (in line order) is blocked. (A
    # rid in the line twice, possible only where NEVER-FIT went unchecked, is the rule's own to judge.)
    head = waiting[num_admitted]
    if admitted and any(chunk.track.rid == head.rid for chunk in admitted):
        return False
    return not (len(s.running) + num_admitted < cfg.max_seqs
                and head.request.reservation <= s.free_kv - f.admitted_reservation)


def done_holds(s: Shadow, f: StepFacts) -> bool:
    """True only if every done check of RULES holds on the completed step's facts `f` (False: not shown).

    TOKENS and FIRST-TOKEN by a count: the emitted rids are distinct, all planned, none a prompt not
    yet done, and as many as the decodes and completing chunks together, so they are exactly those."""
    if f.ended_planned or f.ended_emitted or f.cancelled:
        return False  # TOKENS, CANCEL: a request that has ended; a cancel while pending (not shown here)
    emitted_set = f.emitted_set
    decodes = f.decodes
    # Every entry has n >= 1 (no first_bad_n), so decode tokens == decodes says each decode is n=1.
    if len(f.emitted) != len(emitted_set) or f.first_bad_n is not None or f.num_decode_tokens != len(decodes):
        return False
    num_due = len(decodes)
    for chunk in f.prefills:
        track = chunk.track
        if chunk.start + chunk.n >= track.target:  # Chunk.completes
            num_due += 1
        elif track.rid in emitted_set:
            return False  # FIRST-TOKEN: no token before the prompt is done
    if len(emitted_set) != num_due or not emitted_set <= f.planned:
        return False
    shown = f.reported_free_kv
    if shown is None:
        return True
    expected = s.free_kv - f.admitted_reservation + f.finished_reservation
    return expected - f.cancelled_reservation <= shown <= expected  # KV's return


PLAN_CHECKS = frozenset(r.plan_check for r in RULES if r.plan_check is not None)
DONE_CHECKS = frozenset(r.done_check for r in RULES if r.done_check is not None)


def shortcut(checks: Sequence[tuple[str, Any]], covered: frozenset[Any], holds: Holds) -> Holds | None:
    """`holds` for a monitor judging `checks`, if each is one of `covered` (RULES' own, which `holds`
    shows hold all at once, so any selection of them too); None for no check or for any other check
    (a variant's own rule), which the shortcut knows nothing of."""
    if not checks or any(check not in covered for _, check in checks):
        return None
    return holds
