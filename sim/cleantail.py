"""A plan judged as the decodes judged last, then the rest in the order the contract plans it (`tail`).

Checked simulation's shortcut (`cleansteps.Decodes`) knows, while it takes steps, the decode entries of the
ready requests it has seen (`judged`, immutable pairs) and the ready rids whose decode it has not seen yet
(`fresh`: prompts completed since, in that order). A plan that starts with the same entry objects is one (int, 1)
pair for each of those ready requests; `tail` reads the rest, entry by entry, against the one order that leaves
the policy rules nothing to choose: the fresh decodes, then each partial prompt in admission order given
min(remaining, left), then the waiting head in line order, each a chunk of 1 to min(prompt_len, left) tokens
within a slot and the free KV. A plan in any other order (which may still keep every rule) is not judged
here: None, and the trace checker's own predicates judge it (`Decodes._entries`), else the monitor.

Why each plan rule cannot fire on a plan `tail` returns a `Tail` for:

- PROTOCOL: each entry a tuple or `Entry` of two ints; each rid a ready, partial or waiting request's.
- ONE-ENTRY: the ready, partial and waiting rids are distinct, each matched once; every n >= 1.
- DECODE-FIRST, TOKENS (plan): every ready request is given 1 (the ready count is the shadow's, within B).
- BUDGET, SLOTS, KV: at most B tokens, at most S running with the admitted, their reservations within free KV.
- PREFILL-ONCE: each chunk ends within its prompt.
- FCFS, PARTIAL-NEXT: the admitted are the head of the line, in order; each partial prompt gets
  min(remaining, left), in order (0 once the budget is spent).
- WORK-CONSERVING: budget is left only with every chunk ending its prompt (so every partial prompt served in
  whole) and the next waiting request absent, without a slot, or not fitting the free KV left.
- PROGRESS: the plan is not empty (there is a ready request, or an entry after them).
"""

from __future__ import annotations

from operator import is_
from typing import Any

from stallfree.spec import Entry
from stallfree.spec.reservation.shadow import Shadow


class Tail:
    """What `tail` found, for `Decodes._done_tail` and the move (`Moves._take`): the plan's tokens, its chunks in
    plan order as (track, end, rid) (the partial prompts', then the admissions': the last `admitted`), the
    admissions' reservations, the rid objects of the chunks that end their prompt (`firsts`: with the ready rids,
    what complete() emits), the requests that emit their last token (`ending`), and the fresh decodes' entries it
    saw (`seen`)."""

    __slots__ = ("admitted", "ending", "firsts", "prefills", "reserved", "seen", "tokens")

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        self.reserved = 0
        self.admitted = 0
        self.prefills: list[tuple[Any, int, int]] = []
        self.firsts: list[int] = []
        self.ending: list[Any] = []
        self.seen: tuple[Any, ...] = ()


def tail(shadow: Shadow, ready: set[int], items: Any, judged: tuple[Any, ...], fresh: list[int]) -> Tail | None:
    """`items` (a tuple or list) judged as the entries `judged` (one (int, 1) pair for each ready rid but `fresh`),
    then the rest in the contract's order (the module's doc); None where it is not that, or a plan rule might
    break. Changes nothing."""
    cfg = shadow.config
    num_ready = len(ready)
    if num_ready != shadow.num_ready or num_ready > cfg.token_budget or len(judged) + len(fresh) != num_ready or \
            len(items) < num_ready or not items or not all(map(is_, items, judged)):
        return None  # DECODE-FIRST (a ready request left out); more ready than B (the monitor judges those)
    clean = Tail(num_ready)
    i = len(judged)
    for rid in fresh:  # the decodes of the prompts completed since, in that order
        entry = items[i]
        if (type(entry) is not Entry and type(entry) is not tuple) or len(entry) != 2:
            return None
        got, n = entry
        if type(got) is not int or got != rid or type(n) is not int or n != 1:
            return None
        i += 1
    if fresh:
        clean.seen = tuple(items[len(judged):i])
    i = _partials(shadow, items, i, clean)
    if i < 0 or not _admissions(shadow, items, i, clean) or not _conserving(shadow, clean):
        return None
    return clean


def _partials(shadow: Shadow, items: Any, i: int, clean: Tail) -> int:
    """From entry `i`, each partial prompt in admission order given min(remaining, left) (PARTIAL-NEXT, PREFILL-ONCE),
    none once the budget is spent; the index of the entry after them, or -1 where that is not so."""
    budget, num = shadow.config.token_budget, len(items)
    for t in shadow.prefilling.values():
        left = budget - clean.tokens
        if not left:
            break
        if i == num:
            return -1
        entry = items[i]
        if (type(entry) is not Entry and type(entry) is not tuple) or len(entry) != 2:
            return -1
        rid, n = entry
        request = t.request
        end = request.prompt_len
        if end - t.num_prefilled > left:
            end = t.num_prefilled + left
        if type(rid) is not int or rid != request.rid or type(n) is not int or n != end - t.num_prefilled:
            return -1
        _chunk(clean, t, rid, n, end)
        i += 1
    return i


def _admissions(shadow: Shadow, items: Any, i: int, clean: Tail) -> bool:
    """Whether the entries from `i` on admit the head of the line in order, each 1 to min(prompt_len, left) tokens
    (BUDGET, PREFILL-ONCE, FCFS) with a slot (SLOTS) and its reservation within the free KV (KV)."""
    cfg, waiting, num = shadow.config, shadow.waiting, len(items) - i
    slots = cfg.max_seqs - len(shadow.running)
    if slots < 0 or shadow.free_kv < 0:
        return False  # SLOTS, KV: a step before broke them (unchecked, under a selection of rules)
    if num > slots or num > len(waiting):
        return False  # SLOTS; an entry that is no waiting request's
    for j in range(num):
        entry = items[i + j]
        if (type(entry) is not Entry and type(entry) is not tuple) or len(entry) != 2:
            return False
        rid, n = entry
        t = waiting[j]
        request = t.request
        if type(rid) is not int or rid != request.rid or type(n) is not int or n < 1 or n > request.prompt_len or \
                n > cfg.token_budget - clean.tokens:
            return False
        clean.reserved += request.reservation
        if clean.reserved > shadow.free_kv:
            return False
        clean.admitted += 1
        _chunk(clean, t, rid, n, n)
    return True


def _chunk(clean: Tail, t: Any, rid: int, n: int, end: int) -> None:
    """Count the chunk of `n` tokens of `t` (the plan's `rid`) that ends at prompt position `end`."""
    clean.prefills.append((t, end, rid))
    clean.tokens += n
    request = t.request
    if end == request.prompt_len:
        clean.firsts.append(rid)
        if t.num_emitted + 1 == request.max_new:
            clean.ending.append(t)


def _conserving(shadow: Shadow, clean: Tail) -> bool:
    """WORK-CONSERVING: budget is left only with every chunk ending its prompt and the next waiting request absent,
    without a slot, or not fitting the free KV left."""
    cfg = shadow.config
    if clean.tokens >= cfg.token_budget:
        return True
    if len(clean.firsts) < len(clean.prefills):
        return False
    j, waiting = clean.admitted, shadow.waiting
    return j >= len(waiting) or len(shadow.running) + j >= cfg.max_seqs or \
        waiting[j].request.reservation > shadow.free_kv - clean.reserved
