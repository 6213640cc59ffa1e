"""Reading a v1 step line at the parser's speed: where msgspec is installed (the `fast` extra), a step
line is decoded straight into typed, range-checked fields in C, without a dict or a Python check per
item. The reading is only a shortcut: a line it does not take whole (any error, an unknown key, a
value out of range, a key it cannot prove was given once) is read again by `tracefile.parse_line`,
which names what is wrong. So the steps read and every message are the same with or without msgspec.

Strictness kept: msgspec refuses NaN and Infinity, bad UTF-8 and lone surrogates, as strictjson does
(it refuses more, never less: what it refuses goes to the strict reader). A key given twice is seen by
counting: every key of a JSON object is followed by a colon outside any string, so a line whose colons
number exactly the fields decoded holds each of them once and no nested object.
"""

from __future__ import annotations

from typing import Annotated, Any

from stallfree.spec import MAX_INT

from . import tracefile
from .tracefile import EMPTY, LIFECYCLE_KEYS, TraceEnd, TraceStep

try:
    import msgspec
except ImportError:  # the plain reader does all the work
    msgspec = None


def _decoder() -> Any:
    """msgspec's decoder of a step line, each field typed as tracefile's fast path checks it."""
    if msgspec is None:
        return None
    unset, meta, absent = msgspec.UNSET, msgspec.Meta, msgspec.UnsetType
    rid = Annotated[int, meta(ge=0, le=MAX_INT)]
    rids = list[rid]  # type: ignore[valid-type]
    fields = [
        ("step", int), ("plan", list[Annotated[list[rid], meta(min_length=2, max_length=2)]]),  # type: ignore[valid-type]
        ("emitted", rids), ("finished", rids),
        ("add", list[Annotated[list[rid], meta(min_length=3, max_length=4)]] | absent, unset),  # type: ignore[valid-type]
        ("refuse", Any, unset),  # any JSON values: checked by tracefile's own reading
        ("budget", Annotated[int, meta(ge=1, le=MAX_INT)] | None | absent, unset),
        *((key, rids | absent, unset) for key in LIFECYCLE_KEYS),
    ]
    return msgspec.json.Decoder(msgspec.defstruct("StepLine", fields, forbid_unknown_fields=True))


DECODER = _decoder()
REQUIRED = 4  # step, plan, emitted, finished


def parse_line(line: int, text: str | bytes, expected_step: int) -> TraceStep | TraceEnd:
    """As `tracefile.parse_line`: one line after the header, a step numbered `expected_step` or the end."""
    item = _fast(line, text, expected_step) if DECODER is not None else None
    return item if item is not None else tracefile.parse_line(line, text, expected_step)


def _fast(line: int, text: str | bytes, expected_step: int) -> TraceStep | None:
    """The step, or None where the strict reader must judge the line."""
    try:
        data = DECODER.decode(text)
    except (msgspec.MsgspecError, ValueError, RecursionError):  # ValueError: a str msgspec cannot encode
        return None
    if data.step != expected_step:
        return None
    unset = msgspec.UNSET
    optional = (data.add, data.refuse, data.budget, data.stop, data.cancel, data.cancel_pending)
    present = REQUIRED + len(optional) - optional.count(unset)
    if text.count(b":" if type(text) is bytes else ":") != present:  # type: ignore[arg-type]
        return None  # a key twice, a nested object, or a colon inside a string: the strict reader decides
    if present == REQUIRED:  # the common line
        return TraceStep(data.step, data.plan, data.emitted, data.finished, EMPTY, EMPTY, None, False)
    add = EMPTY if data.add is unset else data.add
    refuse = EMPTY if data.refuse is unset else tracefile._refuse(line, data.refuse)
    priorities = any(len(entry) == 4 for entry in add) or any(len(entry) == 4 for entry in refuse)
    budget = None if data.budget is unset else data.budget
    item = TraceStep(data.step, data.plan, data.emitted, data.finished, add, refuse, budget, priorities)
    for key in LIFECYCLE_KEYS:
        value = getattr(data, key)
        if value is not unset:
            setattr(item, key, value)
    return item
