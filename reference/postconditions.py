"""The post-conditions of the reference's state: what holds after every add(), cancel(),
schedule() and complete(), each citing the invariant of `stallfree.spec.reservation.invariants` or the rule of
`stallfree.spec.reservation.rules` it is the reference's own form of.

The spec's invariants judge the contract's account of a state (the monitor's shadow); these judge
the reference's containers, including the bookkeeping it keeps for speed (the finishing calendar, the
free KV count), which no protocol call shows whole. They are for tests and debugging, not the step
loop: `broken(scheduler)` walks every request. The tests call it after each call of random workloads
and of the state machine, and show each check failing on a state broken on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .scheduler import Scheduler
    from .sequence import Sequence

Check = Callable[["Scheduler"], "str | None"]


def one_place(s: Scheduler) -> str | None:
    """Every request not ended is in exactly one of the line and `_running`, each held at its own rid;
    a request that ended keeps no place, only its record in `_step.ended`."""
    for where, held in (("waiting", s._waiting), ("running", s._running)):
        for rid, seq in held.items():
            if seq.rid != rid:
                return f"{where}[{rid}] is the sequence of rid {seq.rid}"
    both = s._waiting.keys() & s._running.keys()
    if both:
        return f"rid {min(both)} is both waiting and running"
    for rid, (seq, _) in s._step.ended.items():
        if rid in s._waiting or rid in s._running or seq.rid != rid:
            return f"rid {rid} is recorded as ended while it is still waiting or running"
    return None


def ready_first(s: Scheduler) -> str | None:
    """The ready requests are the first of `_running`, in its order, and the partial ones its tail:
    a prompt completes only after every older one has (PARTIAL-NEXT), so schedule() finds the partial
    ones from its end."""
    head = list(s._running)[: len(s._ready)]
    if head != list(s._ready):
        return f"the ready rids {list(s._ready)} are not the first of the running ones {list(s._running)}"
    return None


def counters(s: Scheduler) -> str | None:
    """A waiting request has run nothing; a partial one has run 0 <= prefilled < prompt_len and
    emitted nothing; a ready one has run its whole prompt, emitted its first token on a completed step
    and has tokens left to emit, and its decode entry is (rid, 1)."""
    steps = s._step.number
    for seq in s._waiting.values():
        if seq.num_prefilled or seq.first_token_step is not None:
            return f"waiting rid {seq.rid} has run {seq.num_prefilled} prompt positions"
    for rid, seq in _partial(s).items():
        if not 0 <= seq.num_prefilled < seq.request.prompt_len or seq.first_token_step is not None:
            return f"partial rid {rid}: prefilled {seq.num_prefilled} of {seq.request.prompt_len}, " \
                   f"first token at step {seq.first_token_step}"
    for rid, entry in s._ready.items():
        seq = s._running[rid]
        first = seq.first_token_step
        if seq.num_prefilled != seq.request.prompt_len or first is None or not first < steps:
            return f"ready rid {rid}: prefilled {seq.num_prefilled} of {seq.request.prompt_len}, first token " \
                   f"at step {first} of {steps} completed"
        if seq.num_emitted(steps) >= seq.request.max_new:
            return f"ready rid {rid} has emitted all its {seq.request.max_new} tokens and still runs"
        if (entry.rid, entry.n) != (rid, 1):
            return f"ready rid {rid}'s decode entry is {entry}"
    return None


def within_slots(s: Scheduler) -> str | None:
    """The running requests (ready and partial) never outnumber the slots S."""
    num_running = len(s._running)
    if num_running > s.config.max_seqs:
        return f"{num_running} requests running; max_seqs is {s.config.max_seqs}"
    return None


def kv_count(s: Scheduler) -> str | None:
    """`_free_kv` is K minus the reservations of the running requests, never negative: each is taken
    at admission and given back on the step its request ends."""
    reserved = sum(seq.request.reservation for seq in s._running.values())
    if s._free_kv != s.config.kv_tokens - reserved or s._free_kv < 0:
        return f"_free_kv is {s._free_kv}; K {s.config.kv_tokens} minus the running reservations is " \
               f"{s.config.kv_tokens - reserved}"
    return None


def ready_within_budget(s: Scheduler) -> str | None:
    """The ready requests never outnumber the budget B, so schedule() decodes all of them every step."""
    if len(s._ready) > s.config.token_budget:
        return f"{len(s._ready)} requests are ready; the budget is {s.config.token_budget}"
    return None


def one_partial(s: Scheduler) -> str | None:
    """Between steps (no plan pending) at most one request is partial. While a plan is pending, the
    requests it admits are partial too, until complete() makes those it prefilled whole ready."""
    partial = _partial(s)
    if s._step.plan is None and len(partial) > 1:
        return f"requests {list(partial)} are all partial"
    return None


def calendar(s: Scheduler) -> str | None:
    """`_finishing` holds each ready request once, under the step that emits its max_new-th token
    (first token's step + max_new - 1, not yet completed), and nothing else: the step on which
    complete() ends it and returns its KV."""
    seen: dict[int, int] = {}
    for due, seqs in s._finishing.items():
        if not seqs or due < s._step.number:
            return f"_finishing[{due}] holds {[q.rid for q in seqs]} after {s._step.number} completed steps"
        for seq in seqs:
            if seq.rid in seen or s._running.get(seq.rid) is not seq or seq.rid not in s._ready:
                return f"_finishing[{due}] holds rid {seq.rid}, which is not a ready request listed once"
            seen[seq.rid] = due
            first = seq.first_token_step
            if first is None or due != first + seq.request.max_new - 1:
                return f"rid {seq.rid} is due to finish at step {due}; its first token at {first}, " \
                       f"max_new {seq.request.max_new}"
    if set(seen) != set(s._ready):
        return f"ready rid(s) {sorted(set(s._ready) - set(seen))} are due to finish on no step"
    return None


def pending(s: Scheduler) -> str | None:
    """A plan is pending for the next step or none is; the cancels that wait for it are of running
    requests, and with no plan pending none waits (they belong to the pending step)."""
    step = s._step
    if step.plan is None:
        return f"rids {sorted(step.cancelled)} wait to be cancelled with no plan pending" if step.cancelled else None
    if step.plan.step != step.number:
        return f"the pending plan is for step {step.plan.step}; {step.number} steps completed"
    for rid, seq in step.cancelled.items():
        if s._running.get(rid) is not seq:
            return f"rid {rid} waits to be cancelled but is not running"
    return None


def _partial(s: Scheduler) -> dict[int, Sequence]:
    """The running requests whose prompt is not done, by rid."""
    return {rid: seq for rid, seq in s._running.items() if rid not in s._ready}


@dataclass(frozen=True, slots=True)
class Postcondition:
    """A fact about the reference's state after every call: the spec ID it is the form of, its check."""

    cites: str
    check: Check

    @property
    def statement(self) -> str:
        return " ".join((self.check.__doc__ or "").split())


POSTCONDITIONS: tuple[Postcondition, ...] = (
    Postcondition("TYPES", one_place),
    Postcondition("PARTIAL-NEXT", ready_first),
    Postcondition("TYPES", counters),
    Postcondition("SLOTS", within_slots),
    Postcondition("KV", kv_count),
    Postcondition("READY-WITHIN-BUDGET", ready_within_budget),
    Postcondition("ONE-PARTIAL", one_partial),
    Postcondition("TOKENS", calendar),
    Postcondition("CANCEL", pending),
)


def broken(s: Scheduler) -> tuple[str, str] | None:
    """The first post-condition `s` breaks, as (the spec ID it cites, what is wrong), or None."""
    for postcondition in POSTCONDITIONS:
        message = postcondition.check(s)
        if message is not None:
            return postcondition.cites, f"{postcondition.check.__name__}: {message}"
    return None
