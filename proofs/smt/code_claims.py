"""What the code theorems claim of one transition of the scheduler's own code, read through its public
views (`progress`, `waiting`, `running`, `free_kv`, `ended`, `is_idle`) and its plan.

Each check calls `claim(rule, ok, message)`; `ok` may be symbolic (its truth is a branch of the
exploration), so a claim false on some feasible path is found on that path, with its values. The plan's
rules are the contracts' own predicates (`contracts.limits`, `contracts.policy`, which
`tests/test_proofs_encodings.py` holds equal to the spec's rules on concrete steps); the request's life
(PREFILL-ONCE, FIRST-TOKEN, TOKENS, END, STOP, CANCEL) is stated here, per request, from its progress
before and after; the state's invariant is the reference's post-conditions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stallfree.reference import postconditions
from stallfree.spec.phase import Phase

from ..contracts.contracts import limits, policy

Claim = Callable[[str, Any, str], None]
ENDS = (Phase.FINISHED, Phase.STOPPED, Phase.CANCELLED)


@dataclass(frozen=True, slots=True)
class Views:
    """What the scheduler shows at one moment: each rid's progress (None: no record), the lines."""

    progress: dict[int, Any]
    waiting: tuple[int, ...]
    running: tuple[int, ...]
    free_kv: Any
    ended: tuple[int, ...]
    idle: bool


def views(s: Any, rids: range) -> Views:
    shown = {}
    for rid in rids:
        try:
            shown[rid] = s.progress(rid)
        except KeyError:
            shown[rid] = None
    return Views(shown, tuple(r.rid for r in s.waiting), tuple(r.rid for r in s.running), s.free_kv,
                 tuple(s.ended), s.is_idle)


def invariant(claim: Claim, s: Any, when: str) -> None:
    """The reference's post-conditions (TYPES, SLOTS, KV, READY-WITHIN-BUDGET, ONE-PARTIAL, the
    calendar of TOKENS, CANCEL's pending cancels) after a call."""
    found = postconditions.broken(s)
    if found is not None:
        claim(found[0], False, f"after {when}: {found[1]}")


def plan_rules(claim: Claim, s: Any, before: Views, plan: Any) -> None:
    """BUDGET, ONE-ENTRY, SLOTS, KV, FCFS (`contracts.limits`), DECODE-FIRST, PARTIAL-NEXT,
    WORK-CONSERVING (`contracts.policy`) of the plan, and PROGRESS's "empty only when idle"."""
    c = s.config
    config = (c.token_budget, c.max_seqs, c.kv_tokens)
    entries = [(e.rid, e.n) for e in plan]
    shown = before.progress
    for rule, ok in limits(config, entries, s.running, s.waiting, s.free_kv, lambda rid: rid).items():
        claim(rule, ok, f"the plan {entries} breaks {rule}")
    ready = [rid for rid in before.running if shown[rid].phase is Phase.READY]
    remaining = {rid: shown[rid].prompt_len - shown[rid].num_prefilled
                 for rid in before.running if shown[rid].phase is Phase.PARTIAL}
    waiting = [_request(shown[rid]) for rid in before.waiting]
    for rule, ok in policy(config, ready, remaining, waiting, entries, len(s.running), s.free_kv).items():
        claim(rule, ok, f"the plan {entries} breaks {rule}")
    claim("PROGRESS", bool(entries) or before.idle, "an empty plan while requests wait or run")


def _request(p: Any) -> Any:
    from stallfree.spec.types import Request

    value = object.__new__(Request)  # symbolic lengths: validation is the type assumptions' (symstate)
    for name, field_value in (("rid", p.rid), ("prompt_len", p.prompt_len), ("max_new", p.max_new)):
        object.__setattr__(value, name, field_value)
    return value


def life(claim: Claim, before: Views, after: Views, plan: Any, emitted: tuple[int, ...],
         stopped: tuple[int, ...] = (), cancelled: tuple[int, ...] = ()) -> None:
    """PREFILL-ONCE, FIRST-TOKEN, TOKENS, END, STOP and CANCEL of every request known before the step,
    from its progress before and after, and the `ended` and KV views after."""
    given = {e.rid: e.n for e in plan}
    for rid, p0 in before.progress.items():
        if p0 is None:
            continue
        p1 = after.progress[rid]
        if p1 is None:
            claim("END", False, f"rid {rid} has no record right after the step it ended in")
            continue
        _one(claim, rid, p0, p1, given.get(rid, 0), rid in emitted)
        _phase(claim, rid, p0, p1, given.get(rid, 0), rid in stopped, rid in cancelled)
    ended = {rid for rid, p in after.progress.items() if p is not None and p.phase in ENDS}
    claim("END", set(after.ended) == ended, f"ended shows {after.ended}; the requests that ended are {sorted(ended)}")


def _one(claim: Claim, rid: int, p0: Any, p1: Any, n: Any, emits: bool) -> None:
    if p0.phase is Phase.READY:
        claim("PREFILL-ONCE", p1.num_prefilled == p0.num_prefilled, f"rid {rid}: a decode moved its prefill")
        claim("TOKENS", emits, f"rid {rid} was decoded and emitted nothing")
    else:
        claim("PREFILL-ONCE", p1.num_prefilled == p0.num_prefilled + n,
              f"rid {rid}: its chunk of {n} did not advance its prefill by {n}")
        claim("PREFILL-ONCE", p1.num_prefilled <= p1.prompt_len, f"rid {rid}: prefill past its prompt")
        done = p1.num_prefilled == p1.prompt_len
        claim("FIRST-TOKEN", done if emits else not done,
              f"rid {rid}: {'emitted' if emits else 'did not emit'} on a chunk that "
              f"{'does not complete' if emits else 'completes'} its prompt")
    claim("TOKENS", p1.num_emitted == p0.num_emitted + (1 if emits else 0),
          f"rid {rid}: progress shows {p1.num_emitted} tokens after {p0.num_emitted} and "
          f"{'one' if emits else 'no'} token emitted")
    claim("TOKENS", p1.num_emitted <= p1.max_new, f"rid {rid}: more than max_new tokens")


def _phase(claim: Claim, rid: int, p0: Any, p1: Any, n: Any, stopped: bool, cancelled: bool) -> None:
    """The phase `progress` shows after the step: STOPPED for a stop, FINISHED on the max_new-th token,
    CANCELLED for a cancel still in force, else where its counts put it."""
    if stopped:
        want = Phase.STOPPED
    elif p1.num_emitted == p1.max_new:
        want = Phase.FINISHED
    elif cancelled:
        want = Phase.CANCELLED
    elif p1.num_prefilled == p1.prompt_len:
        want = Phase.READY
    elif p0.phase is not Phase.WAITING or n:
        want = Phase.PARTIAL
    else:
        want = Phase.WAITING
    rule = {Phase.STOPPED: "STOP", Phase.CANCELLED: "CANCEL"}.get(want, "END")
    claim(rule, p1.phase is want, f"rid {rid} shows {p1.phase.value}; it should be {want.value}")


def kv_view(claim: Claim, s: Any, after: Views) -> None:
    """KV through the views: the free KV shown is K less the reservations of the requests shown running."""
    reserved = sum(after.progress[rid].prompt_len + after.progress[rid].max_new for rid in after.running)
    claim("KV", after.free_kv == s.config.kv_tokens - reserved, "free_kv is not K less the running reservations")


def ranking(claim: Claim, before: Views, after: Views, busy: bool) -> None:
    """PROGRESS: a step that planned something lowers the remaining work (prompt positions to run plus
    tokens to emit, of the requests not ended, read through `progress`), which never goes below 0."""

    def work(shown: Views) -> Any:
        return sum(p.prompt_len - p.num_prefilled + p.max_new - p.num_emitted
                   for p in shown.progress.values() if p is not None and p.phase not in ENDS)

    w0, w1 = work(before), work(after)
    claim("PROGRESS", w1 >= 0, "remaining work below 0")
    if busy:
        claim("PROGRESS", w1 < w0, f"a busy step left the remaining work at {w1} from {w0}")
