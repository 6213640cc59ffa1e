"""The symbolic state of a variant in the batched rendering (`variants.batched.Batched`), for the
variants' code theorems: `variant_state`'s counterpart for its fields.

A batched variant keeps no emitted count: a ready request's is read off its due step (the step that
emits its last token), as the rendering itself reads it, `max_new - (due - num_steps + 1)`; an ended
one's is not kept at all (None: the claims on counts skip it). Its finishing calendar is keyed by
symbolic steps (`symstate.KeyedBySteps`). The states are those outside a run of short steps (no
budget drop below the ready count: READY-WITHIN-BUDGET is a hypothesis of every row).
"""

from __future__ import annotations

from typing import Any

from stallfree.variants.batched import BatchedSequence

from .symstate import KeyedBySteps


def fill(s: Any, shape: Any, levels_of: tuple[int, ...], sym: dict[str, Any], requests: list[Any]) -> None:
    """Put `requests` (rid order) into the batched variant `s` as `shape` says, with `sym`'s values."""
    s.finishing = KeyedBySteps()
    levels = getattr(s, "levels", None)
    for rid, request in enumerate(requests):
        seq = s.seqs[rid] = BatchedSequence(request)
        role = shape.role(rid)
        if role == "waiting":
            if levels is None:
                s.waiting.append(seq)
            else:
                levels[levels_of[rid - shape.ready - shape.partial]].append((sym[f"arrival{rid}"], rid, seq))
            continue
        s.running[rid], seq.rank = seq, rid
        if role == "partial":
            seq.num_prefilled = sym[f"num_prefilled{rid}"]
            s.partial[rid] = seq
        else:
            seq.num_prefilled, seq.due = request.prompt_len, sym[f"due{rid}"]
            s.ready[rid] = seq.decode
            s.finishing.setdefault(seq.due, {})[rid] = seq
    s.num_admitted = shape.ready + shape.partial
    if levels is not None:
        s.num_arrivals = shape.size


def emitted(s: Any, seq: BatchedSequence) -> Any:
    """The tokens `seq` has emitted, as its due step says (None once it has ended: not kept)."""
    rid = seq.request.rid
    if rid in s.ready:
        return seq.request.max_new - (seq.due - s.num_steps + 1)
    return None if seq.ended else 0


def broken(s: Any, waiting: list[Any]) -> tuple[str, str] | None:
    """What the batched fields must satisfy besides `variant_state.broken`'s: each running request in
    `partial` or `ready` (not both), due after the steps done and filed under its due step in the
    calendar, which holds nothing else; `ended` exactly for those neither running nor `waiting`."""
    line = {seq.request.rid for seq in waiting}
    for rid, seq in s.seqs.items():
        if seq.ended is (rid in s.running or rid in line):
            return "END", f"rid {rid} is marked ended {seq.ended} while {'live' if not seq.ended else 'ended'}"
    if s.in_short_run or getattr(s, "order", None) is not None:
        return "READY-WITHIN-BUDGET", "a run of short steps (a budget drop) is outside these states"
    for rid, seq in s.running.items():
        if (rid in s.partial) == (rid in s.ready) or seq.ended:
            return "TYPES", f"running rid {rid} is partial and ready, neither, or marked ended"
        if rid in s.ready and (seq.due < s.num_steps or s.finishing.get(seq.due, {}).get(rid) is not seq):
            return "TOKENS", f"ready rid {rid} is not filed under its due step {seq.due}"
    if sum(len(due) for due in s.finishing.values()) != len(s.ready):
        return "TOKENS", "the calendar holds a request that is not ready"
    if set(s.partial) | set(s.ready) != set(s.running):
        return "TYPES", "partial and ready are not the running requests"
    return None
