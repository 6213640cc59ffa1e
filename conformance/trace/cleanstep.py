"""The engine checker's shortcut for a step that breaks no rule: most steps of a long trace.

`clean_step` judges a step in one pass over its plan, with the checker's running and waiting requests
kept as they change (not found again among all requests each step), and says yes only when it has
shown that the full judgement (`Judge.run_step`) would find no break in the step. It mutates nothing
before that is shown, and then moves the account exactly as the full judgement does. Any step it
does not take whole (a preemption, an `admit` or `config` event, a cancel, a step that did not run,
an entry or a token out of the ordinary, a request left unplanned, any break at all) goes to the full
judgement, which names what broke. So a verdict is the same with or without the shortcut; the
shortcut only skips the work of rules that cannot fire.

Why each rule cannot fire on a step it takes, given the account before the step (every request in
it has emitted fewer than max_new tokens: the step that brings one to max_new ends it):

- ONE-ENTRY: the plan's rids are distinct (its dict has as many keys as entries) and each n >= 1.
- PROTOCOL, TOKENS: each rid planned is running or waiting (then admitted), the tokens emitted are
  distinct, all planned, and none beyond max_new; a decode is given exactly 1.
- PREFILL-ONCE, FIRST-TOKEN: each chunk ends within the known tokens, and a token is emitted exactly
  by the entries whose chunk reaches them all.
- FCFS, SLOTS, KV: those admitted are the longest waiting, none was preempted (its KV may come back
  whole), the running requests fit S and their reservations fit K; every request that emits its last
  token is in `finished`, and every one finished for "length" emitted exactly max_new.
- BUDGET, DECODE-FIRST, PARTIAL-NEXT, WORK-CONSERVING, PROGRESS: the plan is not empty, carries at
  most the budget, names every running request (so every decode), gives each partial one min(due,
  left) in order of admission, and leaves budget unused only where nothing is owed and the waiting
  head does not fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .v2 import EngineStep, Rid

if TYPE_CHECKING:
    from .enginecheck import EngineTrack, Judge

RUNNING = "running"  # enginecheck's state names (not imported: enginecheck imports this module)


def decode_step(judge: Judge, s: EngineStep) -> bool:
    """`clean_step` for a step in which every running request decodes (each is given 1 and emits it), and
    any request admitted computes its whole prompt and emits its first token: the running requests are
    judged by comparing whole sets, their counts left behind by one more decode each (`Judge.lag`,
    brought up to date by `Judge.sync` before any other judgement). The requests that emit their last
    token are read from a calendar of lags, made at the first such step and added to at each admission."""
    if s.preempt or s.admit or s.config or not s.ran or judge._kept_kv or judge._cancelled_before or judge.odd:
        return False
    if _same_decodes(judge, s):
        return True
    calendar = judge.calendar
    took = _shown_admissions(judge, s) if calendar is not None and judge.shown is not None else None
    if took is None:
        read = _decode_plan(judge, s)
        if read is None:
            return False
        tokens, fresh = read
        calendar = calendar if calendar is not None else _first_calendar(judge)
        if calendar is None:
            return False
        took = _decode_admissions(judge, fresh, tokens, len(s.plan))
        if took is None:
            return False
    admitted, reserved = took
    if not _decode_ends_ok(judge, s, calendar, admitted):
        return False
    _decode_apply(judge, s, calendar, admitted, reserved)
    return True


def _same_decodes(judge: Judge, s: EngineStep) -> bool:
    """`decode_step` of its commonest step, taken in a few comparisons: the decodes shown again (so no
    admission), nothing finished, no request's last token due at this lag (none in the calendar), and
    the waiting head not fitting if budget and a slot are left. False: `decode_step` reads the step."""
    shown, calendar, lag = judge.shown, judge.calendar, judge.lag
    if shown is None or calendar is None or s.finished or lag in calendar:
        return False
    if s.plan != shown[0] or s.emitted != shown[1]:
        return False
    waiting = judge.waiting
    if waiting:
        cfg = judge.cfg
        if shown[2] < cfg.token_budget and len(shown[0]) < cfg.max_seqs:
            head = next(iter(waiting.values()))
            if head.prompt_len + head.max_new <= cfg.kv_tokens - judge.reserved:
                return False  # WORK-CONSERVING: the waiting head fits (judged again, and named, by the full read)
    judge.lag = lag + 1
    return True


def _decode_plan(judge: Judge, s: EngineStep) -> tuple[int, list[tuple[Rid, int]]] | None:
    """The plan's tokens, and its entries for requests not running (in plan order, each n >= 1: admissions,
    for `_decode_admissions` to match with the waiting head), when it names every running request once,
    each given 1, every rid it names emits once, and it fits the budget and the slots (ONE-ENTRY, TOKENS,
    FIRST-TOKEN, BUDGET, SLOTS); else None."""
    plan, emitted = s.plan, s.emitted
    shown = judge.shown
    if shown is not None and plan == shown[0] and emitted == shown[1]:
        return shown[2], []  # the decodes shown, on the same running requests
    return _read_decodes(judge, plan, emitted)


def _shown_admissions(judge: Judge, s: EngineStep) -> tuple[list[EngineTrack], int] | None:
    """`_decode_plan` and `_decode_admissions` in one pass for the commonest admission step: the plan is the
    decodes shown, then the head of the waiting line in its order, each given its whole prompt, and the
    tokens are the decodes' then the same rids in the same order, within the budget, the slots and KV, the
    next waiting head not fitting if budget and a slot are left: those admitted and the KV then reserved.
    None: the step is read whole (which finds the same where this does, and judges the rest)."""
    plan, emitted = s.plan, s.emitted
    decodes, decoded, tokens = judge.shown  # type: ignore[misc]
    num = len(decodes)
    if len(plan) <= num or len(emitted) != len(plan) or plan[:num] != decodes or emitted[:num] != decoded:
        return None
    reserved = judge.reserved
    admitted: list[EngineTrack] = []
    heads = iter(judge.waiting.values())
    for i in range(num, len(plan)):
        rid, n = plan[i]
        t = next(heads, None)
        if t is None or t.rid != rid or emitted[i] != rid or n < 1 or t.preempted is not None or t.computed != 0 \
                or n != t.prompt_len + t.emitted:
            return None  # FCFS, PROTOCOL, TOKENS, FIRST-TOKEN, or not a whole prompt
        admitted.append(t)
        tokens += n
        reserved += t.prompt_len + t.max_new
    cfg = judge.cfg
    if tokens > cfg.token_budget or len(plan) > cfg.max_seqs or reserved > cfg.kv_tokens:
        return None  # BUDGET, SLOTS, KV
    if _head_fits(judge, admitted, tokens, len(plan), reserved):
        return None  # WORK-CONSERVING
    return admitted, reserved


def _read_decodes(judge: Judge, plan: list[tuple[Rid, int]],
                  emitted: list[Rid]) -> tuple[int, list[tuple[Rid, int]]] | None:
    """`_decode_plan` read whole: the plan as a dict and the tokens as a set, compared with the running rids."""
    running = judge.running
    if not plan or len(plan) < len(running) or len(emitted) != len(plan):
        return None
    got = dict(plan)
    if len(got) != len(plan) or min(got.values()) < 1 or not running.keys() <= got.keys():
        return None
    emitting = set(emitted)
    if len(emitting) != len(emitted) or emitting != got.keys():
        return None  # TOKENS (a token twice, or unplanned), FIRST-TOKEN
    cfg = judge.cfg
    tokens = sum(got.values())
    if tokens > cfg.token_budget or len(plan) > cfg.max_seqs:
        return None  # BUDGET, SLOTS
    fresh = [entry for entry in plan if entry[0] not in running] if len(plan) > len(running) else []
    if tokens - sum(n for _, n in fresh) != len(running):
        return None  # a decode given more than 1
    if not fresh:
        judge.shown = (plan, emitted, tokens)  # forgotten or moved on when the running requests change
    return tokens, fresh


def _first_calendar(judge: Judge) -> dict[int, list[Rid]] | None:
    """The first of a run of decode steps: every running request must be a decode; their last tokens'
    calendar, by lag (kept on the judge), or None."""
    calendar: dict[int, list[Rid]] = {}
    for t in judge.running.values():
        if t.emitted < 1 or t.prompt_len + t.emitted - t.computed != 1 or t.emitted >= t.max_new:
            return None
        calendar.setdefault(t.max_new - t.emitted - 1, []).append(t.rid)
    judge.calendar = calendar
    return calendar


def _decode_admissions(judge: Judge, fresh: list[tuple[Rid, int]], tokens: int,
                       planned: int) -> tuple[list[EngineTrack], int] | None:
    """Those admitted (`fresh`: the longest waiting, each with its whole prompt) and the KV then reserved,
    when KV fits and the waiting head left does not (FCFS, KV, WORK-CONSERVING); else None."""
    waiting, cfg = judge.waiting, judge.cfg
    reserved = judge.reserved
    admitted: list[EngineTrack] = []
    if fresh:
        heads = iter(waiting.values())
        for rid, n in fresh:
            t = next(heads, None)
            if t is None or t.rid != rid or t.preempted is not None or t.computed != 0 or n != t.prompt_len + t.emitted:
                return None  # FCFS, or not a whole prompt (then the full judgement)
            admitted.append(t)
            reserved += t.prompt_len + t.max_new
        if reserved > cfg.kv_tokens:
            return None  # KV
    if _head_fits(judge, admitted, tokens, planned, reserved):
        return None  # WORK-CONSERVING: the waiting head fits
    return admitted, reserved


def _head_fits(judge: Judge, admitted: list[EngineTrack], tokens: int, planned: int, reserved: int) -> bool:
    """Whether budget and a slot are left and the waiting head after those admitted (the longest waiting)
    fits the KV left (WORK-CONSERVING then breaks)."""
    waiting, cfg = judge.waiting, judge.cfg
    if tokens < cfg.token_budget and len(waiting) > len(admitted) and planned < cfg.max_seqs:
        head = next(t for i, t in enumerate(waiting.values()) if i >= len(admitted))
        return head.prompt_len + head.max_new <= cfg.kv_tokens - reserved
    return False


def _decode_ends_ok(judge: Judge, s: EngineStep, calendar: dict[int, list[Rid]],
                    admitted: list[EngineTrack]) -> bool:
    """Every request emitting its last token is finished for "length", and only those; others end only
    by "stop", and only if planned (KV)."""
    running = judge.running
    due = calendar.get(judge.lag)
    ending = [rid for rid in due if rid in running] if due else []  # those emitting their last token
    for t in admitted:
        if t.max_new == 1:
            ending.append(t.rid)
    finished = s.finished
    if not finished and not ending:
        return True
    done = {rid for rid, _ in finished}
    if len(done) != len(finished) or not done.issuperset(ending):
        return False  # KV: a last token out, its KV not returned; or a rid finished twice
    for rid, reason in finished:
        if reason == "length":
            if rid not in ending:
                return False  # KV: its KV back before its last token
        elif reason != "stop" or (rid not in running and all(t.rid != rid for t in admitted)):
            return False
    return True


def _decode_apply(judge: Judge, s: EngineStep, calendar: dict[int, list[Rid]], admitted: list[EngineTrack],
                  reserved: int) -> None:
    """No rule breaks: move the account. An admitted request's counts are kept `lag + 1` behind, as the others'."""
    running, waiting, lag = judge.running, judge.waiting, judge.lag
    for t in admitted:
        del waiting[t.rid]
        running[t.rid] = t
        t.state = RUNNING
        t.admitted_at = judge._admissions
        judge._admissions += 1
        t.computed = t.prompt_len - lag - 1
        t.emitted = -lag
        if t.max_new > 1:
            calendar.setdefault(lag + t.max_new - 1, []).append(t.rid)
    judge.reserved = reserved
    if s.finished:
        _end(judge, s, lag + 1)
    if admitted or s.finished:
        judge.shown = _next_decodes(s, admitted)
    calendar.pop(lag, None)
    judge.lag = lag + 1


def _next_decodes(s: EngineStep, admitted: list[EngineTrack]) -> tuple[list[tuple[Rid, int]], list[Rid], int]:
    """The decodes of the running requests after a step `decode_step` took that admitted or ended some: its
    plan's rids less those finished, each given 1, in its order, and its tokens in theirs (the plan
    named every running request once, each given 1, and each admitted one, and each emitted once)."""
    plan = s.plan
    num = len(plan) - len(admitted)
    if [rid for rid, _ in plan[num:]] == [t.rid for t in admitted]:  # the decodes first, each (rid, 1) already
        decodes = plan[:num] + [(t.rid, 1) for t in admitted]
    else:
        decodes = [(rid, 1) for rid, _ in plan]
    tokens = s.emitted
    if s.finished:
        tokens = tokens.copy()
        try:
            for rid, _ in s.finished:
                decodes.remove((rid, 1))
                tokens.remove(rid)
        except ValueError:  # a record made by hand, its entries lists (each reader makes tuples): built anew
            done = {rid for rid, _ in s.finished}
            decodes = [(rid, 1) for rid, _ in plan if rid not in done]
            tokens = [rid for rid in s.emitted if rid not in done]
    return decodes, tokens, len(decodes)


def clean_step(judge: Judge, s: EngineStep) -> bool:
    """Judge `s` and move the account if it breaks no rule and is an ordinary step; else change nothing and
    say no (the full judgement then runs on the same account)."""
    if s.preempt or s.admit or s.config or not s.ran or judge._kept_kv or judge._cancelled_before or judge.odd:
        return False
    judge.sync()
    plan = s.plan
    got = dict(plan)
    if not plan or len(got) != len(plan):
        return False
    emitting = set(s.emitted)
    if len(emitting) != len(s.emitted) or not emitting.issubset(got):
        return False
    read = _read_plan(judge, plan, emitting)
    if read is None:
        return False
    tracks, admitted, partial, reaching, last, tokens = read
    reserved = _budget_ok(judge, got, tokens, tracks, admitted, partial)
    if reserved is None:
        return False
    if not _clean_ends_ok(judge, s, got, last):
        return False
    _clean_apply(judge, s, tracks, admitted, reaching, reserved)
    return True


def _read_plan(judge: Judge, plan: tuple, emitting: set[int]) -> tuple | None:
    """One pass over the plan: its tracks in order, those admitted, those running mid-chunk (with their
    admission order), those whose chunk reaches all their known tokens (each emits), those emitting their
    last token, and the tokens planned; None on ONE-ENTRY, PREFILL-ONCE, FIRST-TOKEN or TOKENS, or a
    request not running nor admissible from the start of its prompt."""
    running, waiting = judge.running, judge.waiting
    tokens = 0
    tracks: list[EngineTrack] = []  # the plan's requests, in its order
    admitted: list[EngineTrack] = []
    partial: list[tuple[int, EngineTrack, int]] = []  # (admission order, track, n) of those running mid-chunk
    reaching: list[EngineTrack] = []  # those whose chunk reaches all their known tokens: each emits
    last: list[EngineTrack] = []  # those that emit their last token
    get_running = running.get
    for rid, n in plan:
        if n < 1:
            return None  # ONE-ENTRY
        tokens += n
        t = get_running(rid)
        if t is None:  # admitted in this step, from the start of its prompt
            t = waiting.get(rid)
            if t is None or t.preempted is not None or t.computed != 0:
                return None
            admitted.append(t)
            due = t.prompt_len + t.emitted
        else:
            due = t.prompt_len + t.emitted - t.computed
            if due != 1 or t.emitted < 1:  # not a decode (a decode's n is then 1, or past its due)
                partial.append((t.admitted_at or 0, t, n))
        if n >= due:
            if n > due or rid not in emitting:
                return None  # PREFILL-ONCE (a chunk past the known tokens), FIRST-TOKEN
            reaching.append(t)
            if t.emitted + 1 >= t.max_new:
                if t.emitted + 1 > t.max_new:
                    return None  # TOKENS
                last.append(t)
        tracks.append(t)
    if len(reaching) != len(emitting):
        return None  # FIRST-TOKEN: a token from a chunk that does not reach the known tokens
    return tracks, admitted, partial, reaching, last, tokens


def _budget_ok(judge: Judge, got: dict[int, int], tokens: int, tracks: list[EngineTrack],
               admitted: list[EngineTrack], partial: list[tuple[int, EngineTrack, int]]) -> int | None:
    """The KV reserved after the step's admissions when BUDGET, DECODE-FIRST, SLOTS, FCFS, KV, PARTIAL-NEXT
    and WORK-CONSERVING all hold on the plan read; else None."""
    running, waiting, cfg = judge.running, judge.waiting, judge.cfg
    budget = cfg.token_budget
    planned_running = len(tracks) - len(admitted)
    if tokens > budget or planned_running != len(running):
        return None
    num_running = len(running) + len(admitted)
    if num_running > cfg.max_seqs:
        return None  # SLOTS
    reserved = judge.reserved
    if admitted:
        heads = iter(waiting)
        admitting = {t.rid for t in admitted}
        for _ in admitted:
            if next(heads) not in admitting:
                return None  # FCFS
        reserved += sum(t.prompt_len + t.max_new for t in admitted)
        if reserved > cfg.kv_tokens:
            return None  # KV
    left = budget - (planned_running - len(partial))  # each decode takes 1
    if len(partial) > 1:
        partial.sort(key=lambda entry: entry[0])
    for _, t, n in partial:
        due = t.prompt_len + t.emitted - t.computed
        expected = max(0, min(due, left))
        if n != expected:
            return None  # PARTIAL-NEXT
        left -= expected
    if tokens < budget:  # WORK-CONSERVING: nothing owed is left undone, and the waiting head does not fit
        for _, t, n in partial:
            if n < t.prompt_len + t.emitted - t.computed:
                return None
        for t in admitted:
            if got[t.rid] < t.prompt_len + t.emitted:
                return None
        if num_running < cfg.max_seqs and len(waiting) > len(admitted):
            head = next(t for t in waiting.values() if t.state != RUNNING and t not in admitted)
            if head.prompt_len + head.max_new <= cfg.kv_tokens - reserved:
                return None  # WORK-CONSERVING: the waiting head fits
    return reserved


def _clean_ends_ok(judge: Judge, s: EngineStep, got: dict[int, int], last: list[EngineTrack]) -> bool:
    """Each request finished was planned, not ended before, not cancelled, and ends for "length" exactly
    when its last token is out, else for "stop"; none finished twice (KV)."""
    finished = s.finished
    ending = {t.rid for t in last}
    for rid, reason in finished:
        if reason == "cancel" or rid not in got or rid in judge.ended:
            return False
        if reason == "length":
            if rid not in ending:
                return False  # KV: its last token is not out
        elif reason != "stop":
            return False
    if len(ending) > len(finished) or len({rid for rid, _ in finished}) != len(finished):
        return False
    return ending.issubset(rid for rid, _ in finished)  # else KV: its last token is out, its KV not returned


def _clean_apply(judge: Judge, s: EngineStep, tracks: list[EngineTrack], admitted: list[EngineTrack],
                 reaching: list[EngineTrack], reserved: int) -> None:
    """No rule breaks: move the account as the full judgement does."""
    running, waiting = judge.running, judge.waiting
    for t in admitted:
        del waiting[t.rid]
        running[t.rid] = t
        t.state = RUNNING
        t.admitted_at = judge._admissions
        judge._admissions += 1
    judge.reserved = reserved
    for t, (_, n) in zip(tracks, s.plan, strict=True):
        t.computed += n
    for t in reaching:
        t.emitted += 1
    if s.finished:
        _end(judge, s, 0)


def _end(judge: Judge, s: EngineStep, lag: int) -> None:
    """The step's finished requests leave the account, their reservations back; `lag`: the decodes their
    counts are behind by (a run of decode steps keeps them behind), caught up first."""
    running, reqs, ended, step = judge.running, judge.reqs, judge.ended, s.step
    for rid, _ in s.finished:
        t = running.pop(rid)
        t.emitted += lag
        t.computed += lag
        del reqs[rid]
        ended.add(rid, step)
        judge.reserved -= t.prompt_len + t.max_new
