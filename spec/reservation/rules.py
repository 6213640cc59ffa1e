"""The rules of the contract, one named predicate each, and the registry that reports, tests and
proofs iterate over.

A step rule reads the shadow state before a step and the facts of the step, and returns None when
the rule holds or a sentence saying what happened against what the rule requires. An add rule judges
one call to add(). Rules never change state.
"""

from __future__ import annotations

from collections.abc import Container
from itertools import islice
from typing import Any

from ..ending import ENDED, Ending, Reason, ended_when
from ..rule import Kind, Rule, select_from
from .facts import StepFacts
from .shadow import Shadow, Track

# -- safety of a single plan -----------------------------------------------------------------------


def budget(s: Shadow, f: StepFacts) -> str | None:
    """BUDGET, judged on the plan: its tokens against B."""
    if f.num_tokens > s.config.token_budget:
        return f"the plan carries {f.num_tokens} tokens; the budget is {s.config.token_budget}"
    return None


def one_entry(s: Shadow, f: StepFacts) -> str | None:
    """ONE-ENTRY, judged on the plan: duplicate rids and entries with n < 1."""
    if f.duplicates:
        return f"rid {f.duplicates[0]} appears more than once in the plan"
    if f.first_bad_n is not None:
        rid, n = f.first_bad_n
        return f"rid {rid} is given n={n}; every entry needs n >= 1"
    return None


def slots(s: Shadow, f: StepFacts) -> str | None:
    """SLOTS, judged on the plan: running requests plus this step's admissions against S."""
    num_running = len(s.running) + len(f.admitted)
    if num_running > s.config.max_seqs:
        return (
            f"admitting {[c.track.rid for c in f.admitted]} makes {num_running} requests running; "
            f"max_seqs is {s.config.max_seqs}"
        )
    return None


def kv(s: Shadow, f: StepFacts) -> str | None:
    """KV, judged on the plan: the reservations of running and newly admitted requests against K."""
    free_after_admission = s.free_kv - f.admitted_reservation
    if free_after_admission < 0:
        reserved = s.config.kv_tokens - free_after_admission
        return (
            f"admitting {[c.track.rid for c in f.admitted]} reserves {reserved} KV tokens; "
            f"kv_tokens is {s.config.kv_tokens}"
        )
    return None


def kv_returned(s: Shadow, f: StepFacts) -> str | None:
    """KV, once the step is done: a scheduler that shows its free KV (a `free_kv` attribute) shows
    K minus the reservations of the requests still running, so each reservation came back on the
    step its request ended (last token or stop), not earlier or later. A cancelled request's is due
    by the next schedule() (the contract's words), so one cancelled while this plan was pending may
    still show as taken now; `kv_owed_shown` judges it at that schedule()."""
    if f.reported_free_kv is None:
        return None
    expected = s.free_kv - f.admitted_reservation + f.finished_reservation
    if not expected - f.cancelled_reservation <= f.reported_free_kv <= expected:
        finished = [t.rid for t in f.finished]
        owed = f" ({f.cancelled_reservation} of it may come back by the next schedule())" \
            if f.cancelled_reservation else ""
        return (
            f"the scheduler shows free_kv={f.reported_free_kv} after the step; the reservations of "
            f"running requests leave {expected} free{owed} (finished this step: {finished})"
        )
    return None


def kv_owed_shown(s: Shadow, free_kv: int, owed: int) -> str | None:
    """KV, between two steps: a scheduler that shows its free KV shows K minus the running
    reservations, less at most `owed`, the reservations of running requests cancelled since the last
    schedule() (the contract wants them back by the next one: returned at once, or then)."""
    if s.free_kv - owed <= free_kv <= s.free_kv:
        return None
    if owed:
        return f"the scheduler shows free_kv={free_kv}; the reservations of running requests leave " \
               f"{s.free_kv} free, or {s.free_kv - owed} until the next schedule() returns the {owed} cancelled"
    return f"the scheduler shows free_kv={free_kv}; the reservations of running requests leave {s.free_kv} free"


def prefill_once(s: Shadow, f: StepFacts) -> str | None:
    """PREFILL-ONCE, judged on the plan: each chunk starts where the last ended (the shadow's
    count) and stays within the prompt."""
    for c in f.prefills:
        prompt_len = c.track.request.prompt_len
        if c.start + c.n > prompt_len:
            return (
                f"rid {c.track.rid} gets a chunk of {c.n} at position {c.start}, past the end of its "
                f"{prompt_len}-token prompt (only {prompt_len - c.start} positions remain)"
            )
    return None


def first_token(s: Shadow, f: StepFacts) -> str | None:
    """FIRST-TOKEN, judged once the step is done: a completing chunk emitted, no other chunk did."""
    for c in f.prefills:
        rid = c.track.rid
        if c.completes and rid not in f.emitted_set and rid not in f.cancelled:
            return f"rid {rid}'s chunk completes its prompt, but the step emitted no token for it"
        if not c.completes and rid in f.emitted_set:
            end = c.start + c.n
            return (
                f"rid {rid} emitted a token after prompt positions [{c.start}, {end}) of "
                f"{c.track.request.prompt_len}: before its prompt was done"
            )
    return None


def _planned_after(rid: int, ending: Ending) -> str:
    after = " after emitting all its max_new tokens" if ending.reason is Reason.LENGTH else ""
    return f"plan names rid {rid}, which {ENDED[ending.reason]} {ended_when(ending)}{after}"


def _emitted_after(rid: int, ending: Ending) -> str:
    return f"complete() says rid {rid} emitted a token after it {ENDED[ending.reason]} {ended_when(ending)}"


def _first_ended(found: list[tuple[int, Ending]], cancelled: bool) -> tuple[int, Ending] | None:
    return next(((rid, e) for rid, e in found if (e.reason is Reason.CANCEL) == cancelled), None)


def tokens(s: Shadow, f: StepFacts) -> str | None:
    """TOKENS, judged once the step is done: one token per decode, a decode is n=1, at most one token
    a rid a step, none from a rid not planned, and none from (no plan naming) a request that finished
    or stopped; a request ends at its max_new-th token or at its stop, whichever comes first."""
    if f.ended_planned or f.ended_emitted:  # rare: a plan or a token for a request that has ended
        late = _first_ended(f.ended_planned, cancelled=False)
        if late is not None:
            return _planned_after(*late)
        late = _first_ended(f.ended_emitted, cancelled=False)
        if late is not None:
            return _emitted_after(*late)
    return step_tokens(f, f.cancelled)


def step_tokens(f: Any, excused: Container[int] = ()) -> str | None:
    """The part of TOKENS judged within one step, shared by both designs (`f` is either design's facts):
    at most one token a rid, a decode is n=1 and emits (unless its rid is `excused`: a cancel took
    it, and its token may be reported or not), and no token from a rid not planned."""
    if len(f.emitted) != len(f.emitted_set):
        seen: set[int] = set()
        dup = next(r for r in f.emitted if r in seen or seen.add(r))  # type: ignore[func-returns-value]
        return f"rid {dup} emitted more than one token in one step"
    for track, n in f.decodes:
        if n != 1:
            return f"rid {track.rid} has its prefill done and is given n={n}; a decode is exactly 1 token"
        if track.rid not in f.emitted_set and track.rid not in excused:
            return f"rid {track.rid} was decoded but emitted no token"
    for rid in f.emitted:
        if rid not in f.planned:
            return f"rid {rid} emitted a token but was not in the plan"
    return None


def cancelled_planned(s: Shadow, f: StepFacts) -> str | None:
    """CANCEL, judged on the plan: no entry names a request whose cancel has taken effect."""
    if not f.ended_planned:
        return None
    late = _first_ended(f.ended_planned, cancelled=True)
    return None if late is None else _planned_after(*late)


def cancelled_emitted(s: Shadow, f: StepFacts) -> str | None:
    """CANCEL, judged once the step is done: no token comes from a request whose cancel took effect
    before this step."""
    if not f.ended_emitted:
        return None
    late = _first_ended(f.ended_emitted, cancelled=True)
    return None if late is None else _emitted_after(*late)


# -- the policy --------------------------------------------------------------------------------------


def fcfs(s: Shadow, f: StepFacts) -> str | None:
    """FCFS, judged on the plan: the admitted requests are the head of the waiting line."""
    if not f.admitted:
        return None
    heads = {t.rid for t in islice(s.waiting, len(f.admitted))}  # a set: linear in the admissions
    for c in f.admitted:
        if c.track.rid not in heads:
            admitted = {a.track.rid for a in f.admitted}
            blocked = next(t.rid for t in s.waiting if t.rid not in admitted)
            return f"admitted rid {c.track.rid} while rid {blocked} waited ahead of it"
    return None


def decode_first(s: Shadow, f: StepFacts) -> str | None:
    """DECODE-FIRST, judged on the plan: which ready requests got their decode, and whether prefill
    ran while one did not."""
    budget_ = s.config.token_budget
    if s.num_ready <= budget_:
        if len(f.decodes) == s.num_ready:  # decodes are distinct ready requests: all of them ran
            return None
        decoded = {t.rid for t, _ in f.decodes}
        left_out = [t.rid for t in s.ready() if t.rid not in decoded]
        return f"ready request(s) {left_out[:5]} got no token; the budget of {budget_} covers all {s.num_ready}"
    # More ready requests than budget (possible only if the budget shrank): the oldest B, nothing else.
    oldest = [t.rid for t in s.ready()[:budget_]]
    decoded = {t.rid for t, _ in f.decodes}
    if f.chunks or f.admitted:
        return f"prefill ran while {s.num_ready - len(decoded)} ready request(s) got no token"
    missing = [rid for rid in oldest if rid not in decoded]
    if missing:
        return f"the oldest ready request(s) {missing[:5]} got no token while younger ones did"
    return None


def partial_next(s: Shadow, f: StepFacts) -> str | None:
    """PARTIAL-NEXT, judged on the plan: each partial prompt's chunk against what it is owed."""
    if not s.prefilling:
        return None
    chunks = f.chunks
    left = s.config.token_budget - f.num_decode_tokens
    for i, track in enumerate(s.prefilling.values()):
        expected = max(0, min(track.num_remaining_prompt, left))
        if i < len(chunks) and chunks[i].track is track:  # the usual case: chunks in admission order
            got = chunks[i].n
        else:
            got = next((c.n for c in chunks if c.track is track), 0)
        if got != expected:
            return (
                f"partial rid {track.rid} ({track.num_remaining_prompt} prompt tokens left) got {got} "
                f"with {left} budget left; it is owed min(remaining, left) = {expected}"
            )
        left -= expected
    return None


def work_conserving(s: Shadow, f: StepFacts) -> str | None:
    """WORK-CONSERVING, judged on the plan: unused budget only with everything running served in full
    and the waiting head blocked or absent."""
    return running_served(s, f) or head_blocked(s, f)


def running_served(s: Shadow, f: StepFacts) -> str | None:
    """WORK-CONSERVING's first half: with budget unused, every ready request decoded and every partial
    prompt given all it has left."""
    unused = s.config.token_budget - f.num_tokens
    if unused <= 0:
        return None
    if len(f.decodes) < s.num_ready:
        return f"{unused} budget token(s) unused while a ready request got no decode"
    for c in f.prefills:
        if not c.completes:
            return (
                f"{unused} budget token(s) unused while rid {c.track.rid} got only {c.n} of its "
                f"{c.track.request.prompt_len - c.start} remaining prompt tokens"
            )
    if len(f.chunks) < len(s.prefilling):
        return f"{unused} budget token(s) unused while a partial prompt got no chunk"
    return None


def head_blocked(s: Shadow, f: StepFacts) -> str | None:
    """WORK-CONSERVING's second half: with budget unused, the waiting head cannot be admitted."""
    unused = s.config.token_budget - f.num_tokens
    if unused <= 0:
        return None
    head: Track | None = waiting_head(s, f)
    if head is None:
        return None
    num_running = len(s.running) + len(f.admitted)
    free_kv = s.free_kv - f.admitted_reservation
    if num_running < s.config.max_seqs and head.request.reservation <= free_kv:
        return (
            f"{unused} budget token(s) unused while waiting rid {head.rid} fits: "
            f"{s.config.max_seqs - num_running} slot(s) free, reservation {head.request.reservation} "
            f"<= free KV {free_kv}"
        )
    return None


def waiting_head(s: Any, f: Any) -> Any:
    """The first waiting request the plan does not admit, or None (for either design's shadow and
    facts): the head WORK-CONSERVING asks about once the step's admissions are taken."""
    admitted = {c.track.rid for c in f.admitted}
    return next((t for t in s.waiting if t.rid not in admitted), None)


def progress(s: Shadow, f: StepFacts) -> str | None:
    """PROGRESS, judged on the plan: an empty plan only when idle (the work bound is judged by `play`)."""
    if not f.plan and not s.is_idle:
        return f"empty plan while {len(s.waiting)} request(s) wait and {len(s.running)} run"
    return None


# -- the registry ------------------------------------------------------------------------------------


# The contract's rules. The monitor checks them in this order and reports the first broken one:
# safety of the plan and its tokens, then add() and liveness, then the policy. PROGRESS comes before
# the policy rules because an empty plan while work is pending is first of all a failure to progress.
RULES: tuple[Rule, ...] = (
    Rule("BUDGET", Kind.SAFETY,
         "the tokens of a plan sum to at most the token budget B; each decode counts 1.",
         plan_check=budget),
    Rule("ONE-ENTRY", Kind.SAFETY,
         "a request appears at most once in a plan, with n >= 1.",
         plan_check=one_entry),
    Rule("SLOTS", Kind.SAFETY,
         "admitted, unfinished requests never exceed the slots S.",
         plan_check=slots),
    Rule("KV", Kind.SAFETY,
         "reservations never exceed K; each (prompt_len + max_new) is taken at admission and returned "
         "exactly when its request ends: on the step it emits its last token or stops, or, cancelled, by "
         "the next schedule() after its cancel takes effect; at the end all K is free.",
         plan_check=kv, done_check=kv_returned, design="reservation"),
    Rule("PREFILL-ONCE", Kind.SAFETY,
         "each prompt gets exactly prompt_len prefill tokens in contiguous, in-order chunks: no position "
         "twice, none skipped, no decode before the prompt is done.",
         plan_check=prefill_once),
    Rule("FIRST-TOKEN", Kind.SAFETY,
         "the step whose chunk completes a prompt emits that request's first token, neither an earlier "
         "step nor a later one.",
         done_check=first_token),
    Rule("TOKENS", Kind.SAFETY,
         "each request emits at most max_new tokens, exactly max_new unless it stops or is cancelled: the "
         "first from its last chunk, then one per decode, at most one a step; a stop ends a request only on "
         "a token it emitted in that step (complete() refuses any other, changing nothing), and nothing is "
         "planned or emitted for it after.",
         done_check=tokens),
    Rule("CANCEL", Kind.SAFETY,
         "cancel(rid) of a waiting or running request is accepted; of any other rid (never added, ended, "
         "already cancelled) it raises naming the rid and changes nothing. A waiting request leaves the line "
         "at once; a running one ends at once, or, if cancelled while a plan is pending, when that plan "
         "completes (its token of that step may be reported or not); after that it is never planned and "
         "emits nothing, and its reservation is free for the next schedule().",
         plan_check=cancelled_planned, done_check=cancelled_emitted),
    Rule("NEVER-FIT", Kind.INPUT,
         "add() rejects a request whose prompt_len + max_new exceeds K, or whose fields are invalid (or "
         "whose rid is taken by a request that has not ended), with ValueError or TypeError, and nothing "
         "else changes; it accepts every other request (the rid of an ended request it may accept or refuse)."),
    Rule("PROGRESS", Kind.LIVENESS,
         "every accepted request finishes, stops or is cancelled; a plan is empty only when nothing is "
         "waiting or running.",
         plan_check=progress),
    Rule("FCFS", Kind.POLICY,
         "requests are admitted in arrival order; one that does not fit blocks those behind it; a cancelled "
         "waiting request leaves the line and blocks nothing, those behind it moving up in order.",
         plan_check=fcfs),
    Rule("DECODE-FIRST", Kind.POLICY,
         "every step schedules the oldest ready requests, up to the budget, before any prefill token.",
         plan_check=decode_first),
    Rule("PARTIAL-NEXT", Kind.POLICY,
         "partial prompts take the budget left after decodes before any admission, oldest first, each "
         "min(remaining prompt, budget left).",
         plan_check=partial_next),
    Rule("WORK-CONSERVING", Kind.POLICY,
         "budget is left unused only when nothing more may run: every ready and partial request is served "
         "in full, and the waiting head is blocked (no slot, not enough free KV) or there is none.",
         plan_check=work_conserving),
)
RULE_IDS: tuple[str, ...] = tuple(r.id for r in RULES)
BY_ID: dict[str, Rule] = {r.id: r for r in RULES}


def of_kind(*kinds: Kind, design: str | None = None) -> tuple[str, ...]:
    """IDs of the rules of `kinds`, in registry order, leaving out those of another memory design than
    `design` (None: only the rules every design keeps)."""
    return tuple(r.id for r in RULES if r.kind in kinds and (r.design is None or r.design == design))


def select(ids: object = None) -> tuple[Rule, ...]:
    """The rules named in `ids` (all when None), in registry order; unknown IDs raise naming them."""
    return select_from(RULES, ids)
