"""The v1 shortcut's one-pass judgement of a step of decodes and whole-prompt admissions: the common
admission step of a dense trace (every ready request decodes, the head of the line is admitted with its
whole prompt and emits its first token, and the requests due emit their last token and end).

`whole_admissions` finds what `cleanstep_v1.Shortcut._plan` and `_policy` would find on such a step,
without reading the plan entry by entry: the decodes are compared whole with the ones last judged
(`Shortcut.shown`), and only the admissions, at the plan's tail, are read one by one. It gives a `Clean`
for the shortcut's move only where every condition below holds; then KV's return check
(`cleanstep_v1._kv_back`, the same for every step the shortcut takes) judges the rest. Any other step,
and so every break, goes to the entry-by-entry judgement (then the monitor), which names what broke. Why
each plan rule cannot fire on a step it gives:

- DECODE-FIRST, ONE-ENTRY, TOKENS (the ready): the plan and "emitted" begin with the decodes last
  judged on the ready requests as they still are (each ready request given 1 and emitting, each once).
- PARTIAL-NEXT: no prompt is partial (as `shown` implies: it is judged with none, and forgotten at
  every admission), and each admission ends its prompt.
- FCFS, PROTOCOL, PREFILL-ONCE, FIRST-TOKEN: the rest of the plan is the head of the waiting line in
  its order (live, accepted, not running; distinct, as the live rids are), each given the rest of its
  prompt, and the rest of "emitted" is the same rids in the same order.
- BUDGET, SLOTS, KV (plan): the tokens within B, the running and the admitted within S, the
  admissions' reservations within the free KV.
- WORK-CONSERVING: budget is left only where no request waits behind the admitted, or the next one
  does not fit (no slot, or its reservation is over the free KV left).
"""

from __future__ import annotations

from stallfree.spec.reservation.shadow import Shadow

from .cleanplan import Clean
from .tracefile import TraceStep


def whole_admissions(shown: tuple[list[list[int]], list[int]] | None, due: list[int] | None, shadow: Shadow,
                     item: TraceStep) -> Clean | None:
    """The step's admissions, chunks and ends if its plan is the ready requests' decodes (`shown`: judged
    on the ready requests as they still are) and whole-prompt admissions of the waiting head that break
    no plan rule (`due`: the ready rids that emit their last token here); else None, and the
    entry-by-entry judgement decides. KV's return check (`cleanstep_v1._kv_back`) is the caller's."""
    if shown is None or shadow.prefilling:
        return None
    decodes, tokens = shown
    num, plan, emitted = len(decodes), item.plan, item.emitted
    num_admitted = len(plan) - num
    if len(emitted) != len(plan) or num_admitted > len(shadow.waiting):
        return None  # TOKENS or FIRST-TOKEN (a token more or fewer); PROTOCOL (more admissions than waiting)
    if plan[:num] != decodes or emitted[:num] != tokens:
        return None  # not the decodes last judged: DECODE-FIRST, ONE-ENTRY, TOKENS
    clean = _admitted(shadow, plan, emitted, num)
    if clean is None or not _fits(shadow, clean):
        return None
    if due:
        running = shadow.running
        clean.ending.extend([running[rid] for rid in due])
    return clean


def _admitted(shadow: Shadow, plan: list[list[int]], emitted: list[int], num: int) -> Clean | None:
    """The admissions after the `num` decodes: the waiting head in its order, each given the rest of its
    prompt and emitting its first token; else None (FCFS, PREFILL-ONCE, FIRST-TOKEN, PROTOCOL)."""
    waiting = shadow.waiting
    clean = Clean(None, num)
    admitted, prefills, completing, ending = clean.admitted, clean.prefills, clean.completing, clean.ending
    for i in range(len(plan) - num):
        t = waiting[i]
        request = t.request
        rid, n = plan[num + i]
        end = t.num_prefilled + n
        if rid != request.rid or end != request.prompt_len or emitted[num + i] != rid:
            return None  # FCFS or PROTOCOL; PREFILL-ONCE (n >= 1: a waiting request has prefilled nothing); FIRST-TOKEN
        admitted.append(t)
        prefills.append((t, end))
        completing.append(t)
        clean.reserved += request.reservation
        clean.prefill_tokens += n
        if t.num_emitted + 1 == request.max_new:
            ending.append(t)
    clean.tokens += clean.prefill_tokens
    return clean


def _fits(shadow: Shadow, clean: Clean) -> bool:
    """BUDGET, SLOTS and KV on the plan, and WORK-CONSERVING: budget left only if the next waiting request
    does not fit."""
    cfg, waiting = shadow.config, shadow.waiting
    num_running = len(shadow.running) + len(clean.admitted)
    free_kv = shadow.free_kv - clean.reserved
    if clean.tokens > cfg.token_budget or num_running > cfg.max_seqs or free_kv < 0:
        return False  # BUDGET, SLOTS, KV
    if clean.tokens == cfg.token_budget or len(waiting) == len(clean.admitted) or num_running == cfg.max_seqs:
        return True
    return waiting[len(clean.admitted)].request.reservation > free_kv  # WORK-CONSERVING: the next one does not fit


def next_decodes(shown: tuple[list[list[int]], list[int]], due: list[int] | None,
                 clean: Clean) -> tuple[list[list[int]], list[int]] | None:
    """The decodes the next step shows if every ready request decodes again, once the step `whole_admissions`
    judged (`shown`, `due`, `clean`) is taken: the decodes judged, less the one that ended if it was
    the first (the oldest, as an engine that ends requests in order writes it), then one for each
    admission; so a plan equal to them is the ready requests' decodes, each once. None where it is not
    so simple (two ended, the one that ended not the first, an admission that ended at once): the
    next step's decodes are then judged whole (`Shortcut._decodes`)."""
    decodes, tokens = shown
    if len(clean.ending) != (len(due) if due else 0):
        return None  # an admission emitted its last token with its first
    if due:
        if len(due) != 1 or tokens[0] != due[0] or decodes[0][0] != due[0]:
            return None
        decodes, tokens = decodes[1:], tokens[1:]
    rids = [t.request.rid for t in clean.admitted]
    return decodes + [[rid, 1] for rid in rids], tokens + rids
