"""Converting an engine's scheduling events into trace v2, for `stallfree import-trace --from events`.

An engine that does not assemble one line per step can log one JSON object per scheduling event from
wherever its scheduler makes the decision, in any language:

    {"step": 0, "event": "arrive", "rid": "a", "prompt_len": 20, "max_new": 3}
    {"step": 0, "event": "admit", "rid": "a", "cached": 0}
    {"step": 0, "event": "schedule", "rid": "a", "tokens": 8}
    {"step": 2, "event": "emit", "rid": "a"}
    {"step": 3, "event": "preempt", "rid": "a", "kind": "recompute"}
    {"step": 9, "event": "finish", "rid": "a", "reason": "length"}
    {"step": 9, "event": "end"}

`step` counts the engine's steps from 0, never going back; every step the engine took has at least one
event (`{"step": n, "event": "step"}` marks one in which nothing was scheduled). Within a step the
order of `schedule` events is the plan's order. `arrive` is a request handed to the scheduler before
the step; `admit` its (re)admission, with the tokens it found in a prefix cache (`cached`, default 0);
`emit` a token it produced in the step; `finish` its end after the step, reason `length`, `stop` or
`cancel`; `preempt` (kind `recompute` or `swap`) a preemption before the step's plan ran; `end` that the
engine stopped (PROGRESS is then judged at the end). Rids are ints >= 0 or non-empty strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stallfree.spec import strictjson

from ..trace.tracefile import TraceError
from ..trace.v2 import EngineStep

FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {  # each event's fields beyond step, event, rid
    "arrive": {"prompt_len": int, "max_new": int}, "admit": {"cached": int}, "schedule": {"tokens": int},
    "emit": {}, "finish": {"reason": str}, "preempt": {"kind": str}, "step": {}, "end": {},
}
OPTIONAL = {"cached"}
WORDS = {"reason": ("length", "stop", "cancel"), "kind": ("recompute", "swap")}  # the strings allowed
NO_RID = {"step", "end"}


def read_events(lines: Iterable[str]) -> tuple[list[EngineStep], bool]:
    """The v2 steps of an event log, and whether it ended with an `end` event. Raises TraceError naming
    the line and the field."""
    steps: list[EngineStep] = []
    ended = False
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        if ended:
            raise TraceError(number, "an event after the end event")
        event = parse(number, text)
        if event["event"] == "end":
            ended = True
            continue
        if event["step"] == len(steps):
            steps.append(EngineStep(len(steps), [], [], []))
        elif event["step"] != len(steps) - 1:
            raise TraceError(number, f"step must be {len(steps) - 1} or {len(steps)} (steps count from 0, each "
                                     f"with an event, never going back), got {event['step']}")
        apply(steps[-1], event)
    return steps, ended


def parse(number: int, text: str) -> dict[str, Any]:
    """One event line, its fields checked (TraceError naming the line and the field)."""
    try:
        data = strictjson.loads(text)
    except ValueError as error:
        raise TraceError(number, f"not valid JSON: {error}") from None
    if type(data) is not dict or data.get("event") not in FIELDS:
        raise TraceError(number, f"an event is an object whose event is one of {', '.join(FIELDS)}, got {text[:80]}")
    kind = data["event"]
    a = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} event"
    wanted = {"step": int, "event": str, **({} if kind in NO_RID else {"rid": (int, str)}), **FIELDS[kind]}
    extra = sorted(set(data) - set(wanted))
    if extra:
        raise TraceError(number, f"{a} has no field {extra[0]!r} (its fields: {', '.join(wanted)})")
    for name, types in wanted.items():
        if name not in data and name in OPTIONAL:
            continue
        value = data.get(name)
        if name not in data or type(value) not in (types if isinstance(types, tuple) else (types,)) \
                or (type(value) is int and value < 0) or value == "":
            raise TraceError(number, f"{a}'s {name} must be {_words(types)}, got {value!r:.40}")
        if name in WORDS and value not in WORDS[name]:
            raise TraceError(number, f"{a}'s {name} must be one of {', '.join(WORDS[name])}, got {value!r:.40}")
    return data


def _words(types: type | tuple[type, ...]) -> str:
    return "an int >= 0 or a non-empty string" if isinstance(types, tuple) else \
        {int: "an int >= 0", str: "a non-empty string"}[types]


def apply(step: EngineStep, event: dict[str, Any]) -> None:
    """Add `event` to its step."""
    kind, rid = event["event"], event.get("rid")
    if kind == "arrive":
        step.add.append((rid, event["prompt_len"], event["max_new"]))
    elif kind == "admit":
        step.admit.append((rid, event.get("cached", 0)))
    elif kind == "schedule":
        step.plan.append((rid, event["tokens"]))
    elif kind == "emit":
        step.emitted.append(rid)
    elif kind == "finish":
        step.finished.append((rid, event["reason"]))
    elif kind == "preempt":
        step.preempt.append((rid, event["kind"]))
