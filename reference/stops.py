"""The check of complete()'s `stopped`: each rid in it must emit a token in the plan (rule TOKENS)."""

from __future__ import annotations

from collections.abc import Iterable

from stallfree.spec.errors import FieldTypeError, InvalidField, ProtocolError
from stallfree.spec.types import Plan

from .views import Views


def checked_stops(s: Views, plan: Plan, stopped: Iterable[int]) -> tuple[int, ...]:
    """`stopped` as a tuple, if each rid in it emits a token in `plan`; raise naming the first
    that does not (rule TOKENS: a stop only on an emitted token)."""
    if isinstance(stopped, str | bytes) or not isinstance(stopped, Iterable):
        raise FieldTypeError(f"stopped must be an iterable of rids, got {type(stopped).__name__} {stopped!r:.40}")
    rids = tuple(stopped)
    chunks = {rid: n for rid, n in plan.entries[len(s._ready) :]}
    for i, rid in enumerate(rids):
        if type(rid) is not int:
            raise FieldTypeError(f"stopped[{i}] must be an int rid, got {type(rid).__name__} {rid!r:.40}")
        if rid in rids[:i]:
            raise InvalidField(f"stopped[{i}]: rid {rid} is listed twice")
        if rid in s._ready:
            continue
        seq = s._running.get(rid)
        if seq is None:
            state = "waiting" if rid in s._waiting else "not waiting or running (never added, or ended)"
        elif chunks.get(rid) == seq.num_remaining_prompt:
            continue
        else:
            state = f"partial: its chunk in this step leaves {seq.num_remaining_prompt - chunks.get(rid, 0)} " \
                    "prompt tokens to run"
        raise ProtocolError(f"stopped[{i}]: rid {rid} emits no token in step {plan.step}; it is {state}")
    return rids
