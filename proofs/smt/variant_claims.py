"""What the variants' code theorems claim of one transition of a variant's own code, read off its
fields (a variant has no `progress` view: each request's counts are its sequence's, or under the
batched rendering its due step's, its place the line, `running`, or neither once it has ended) and
its plan.

Each check calls `claim(rule, ok, message)`, `ok` possibly symbolic (its truth is a branch). The plan
rules the variant's contract keeps of `RULES` are the contracts' own predicates (`contracts.limits`,
`contracts.policy`, as the reference's code theorems judge them); those it widens or adds are
`variant_rules`. A request's life (TOKENS, PREFILL-ONCE, FIRST-TOKEN, END) is stated per request from
its counts and place before and after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..contracts.contracts import limits, policy
from .variant_state import is_ready, line, num_emitted

Claim = Callable[[str, Any, str], None]
WAITING, PARTIAL, READY, ENDED = "waiting", "partial", "ready", "ended"  # a variant shows no end's reason
# The priority contract's rules that are those of `RULES` over the line in effective order (the spec's own
# statement of them): judged by the same predicates, given the line in that order (`variant_rules.order`).
WIDENED_AS = {"FCFS": "PRIORITY-ORDER", "WORK-CONSERVING": "PRIORITY-WORK-CONSERVING"}


@dataclass(frozen=True, slots=True)
class Seen:
    """One request as the variant's fields show it."""

    place: str
    num_prefilled: Any
    num_emitted: Any
    prompt_len: Any
    max_new: Any


@dataclass(frozen=True, slots=True)
class Views:
    """The variant at one moment: each rid's request (None: never added), the line, the running set."""

    seen: dict[int, Seen | None]
    line: tuple[tuple[int, ...], ...]  # one queue, or one per priority level
    running: tuple[int, ...]  # admission order
    free_kv: Any
    last_token: dict[int, Any]  # rotation's: each ready rid's step of its last token (else empty)
    arrivals: dict[int, tuple[int, Any, int]]  # priorities': each waiting rid's (level, arrival step, number)


def views(s: Any, rids: range) -> Views:
    queues = tuple(tuple(seq.request.rid for seq in queue) for queue in line(s))
    waiting = {rid for queue in queues for rid in queue}
    seen: dict[int, Seen | None] = {}
    for rid in rids:
        seq = s.seqs.get(rid)
        if seq is None:
            seen[rid] = None
            continue
        place = (READY if is_ready(s, seq) else PARTIAL) if rid in s.running else WAITING if rid in waiting else ENDED
        seen[rid] = Seen(place, seq.num_prefilled, num_emitted(s, seq), seq.request.prompt_len, seq.request.max_new)
    levels = enumerate(getattr(s, "levels", ()))
    arrivals = {entry[2].request.rid: (level, entry[0], entry[1]) for level, queue in levels for entry in queue}
    return Views(seen, queues, tuple(s.running), s.free_kv, dict(getattr(s, "last_token", {})), arrivals)


def emits(seen: Seen, n: Any) -> bool:
    """Whether a plan entry of `n` makes the request emit: a decode, or a chunk that completes its prompt."""
    return seen.place == READY or (seen.place in (PARTIAL, WAITING) and bool(seen.num_prefilled + n == seen.prompt_len))


def plan_rules(claim: Claim, s: Any, before: Views, order: list[Any], plan: Any, judged: set[str],
               own: dict[str, Callable[..., Any]]) -> None:
    """The contract's plan rules of `judged` (its rule IDs): those of `RULES` by the contracts'
    predicates (FCFS and WORK-CONSERVING as the priority rules that widen them, `WIDENED_AS`), the
    variant's (`own`) by theirs; `order` is the waiting requests in the contract's order before the step."""
    c = s.config
    config = (c.token_budget, c.max_seqs, c.kv_tokens)
    entries = [(rid, n) for rid, n in plan]
    place = {rid: i for i, rid in enumerate((*before.running, *(r.rid for r in order)))}
    running = [seq.request for seq in s.running.values()]
    queued = [seq.request for queue in line(s) for seq in queue]
    found = limits(config, entries, running, queued, s.free_kv, lambda rid: place[rid])
    shown = before.seen
    ready = [rid for rid in before.running if shown[rid].place == READY]
    remaining = {rid: shown[rid].prompt_len - shown[rid].num_prefilled
                 for rid in before.running if shown[rid].place == PARTIAL}
    found.update(policy(config, ready, remaining, order, entries, len(s.running), s.free_kv))
    for rule, ok in found.items():
        rule = WIDENED_AS[rule] if rule in WIDENED_AS and WIDENED_AS[rule] in judged else rule
        if rule in judged:
            claim(rule, ok, f"the plan {entries} breaks {rule}")
    for rule, check in own.items():
        if rule in judged:
            claim(rule, check(s, before, order, entries), f"the plan {entries} breaks {rule}")
    claim("PROGRESS", bool(entries) or (not any(before.line) and not before.running),
          "an empty plan while requests wait or run")


def life(claim: Claim, before: Views, after: Views, plan: Any, emitted: tuple[int, ...],
         stopped: tuple[int, ...] = (), cancelled: tuple[int, ...] = ()) -> None:
    """TOKENS, PREFILL-ONCE, FIRST-TOKEN and END of every request known before the step."""
    given = {rid: n for rid, n in plan}
    for rid, b in before.seen.items():
        a = after.seen[rid]
        if b is None or a is None:
            claim("END", b is None and a is None, f"rid {rid} has lost its record")
            continue
        if b.place == ENDED:
            claim("END", a.place == ENDED and rid not in given and rid not in emitted,
                  f"rid {rid}, ended before the step, is {a.place}, planned {rid in given}, emitted {rid in emitted}")
            continue
        n = given.get(rid, 0)
        token = rid in given and emits(b, n)
        claim("TOKENS", (rid in emitted) is token, f"rid {rid}: emitted {rid in emitted}, due a token {token}")
        count = b.num_emitted + (1 if token else 0)  # what it has emitted after the step
        if a.num_emitted is not None:  # None: a batched variant keeps no count for an ended request
            claim("TOKENS", a.num_emitted == count and a.num_emitted <= a.max_new,
                  f"rid {rid}: {a.num_emitted} tokens after {b.num_emitted}")
        grown = 0 if b.place == READY else n
        claim("PREFILL-ONCE", a.num_prefilled == b.num_prefilled + grown and a.num_prefilled <= a.prompt_len,
              f"rid {rid}: prefill {a.num_prefilled} after {b.num_prefilled} and a chunk of {grown}")
        if b.place in (PARTIAL, WAITING) and rid in given:
            claim("FIRST-TOKEN", token is bool(a.num_prefilled == a.prompt_len),
                  f"rid {rid}: a first token off its prompt's end")
        ends = (token and (bool(count == a.max_new) or rid in stopped)) or rid in cancelled
        claim("END", (a.place == ENDED) is ends,
              f"rid {rid} is {a.place} after the step; it should {'' if ends else 'not '}have ended")


def kv_view(claim: Claim, s: Any, after: Views) -> None:
    """KV: the free KV is K less the reservations of the running requests, and never below 0."""
    reserved = sum(after.seen[rid].prompt_len + after.seen[rid].max_new for rid in after.running
                   if after.seen.get(rid) is not None)
    claim("KV", after.free_kv == s.config.kv_tokens - reserved and after.free_kv >= 0,
          "free_kv is not K less the running reservations")
