"""Reading a step line (v1 and v2) at the parser's speed: where msgspec is installed (the `fast` extra), a step
line is decoded straight into typed, range-checked fields in C, without a dict or a Python check per
item. The reading is only a shortcut: a line it does not take whole (any error, an unknown key, a
value out of range, a key it cannot prove was given once) is read again by the strict reader
(`tracefile.parse_line`, `v2.parse_line`), which names what is wrong. So the steps read and every
message are the same with or without msgspec. A v2 line with "config", "x" or a "finished" entry that
carries its reason is always read by the strict reader.

Strictness kept: msgspec refuses NaN and Infinity, bad UTF-8 and lone surrogates, as strictjson does
(it refuses more, never less: what it refuses goes to the strict reader). A key given twice is seen by
counting: every key of a JSON object is followed by a colon outside any string, so a line whose colons
number exactly the fields decoded holds each of them once and no nested object.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from stallfree.spec import MAX_INT

from . import tracefile
from .tracefile import EMPTY, LIFECYCLE_KEYS, TraceEnd, TraceStep
from .v2 import MAX_RID_CHARS, EngineEnd, EngineStep

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


def _decoder_v2() -> Any:
    """msgspec's decoder of a v2 step line without "config" or "x", each field as `v2.parse_line` checks it."""
    if msgspec is None:
        return None
    unset, meta, absent = msgspec.UNSET, msgspec.Meta, msgspec.UnsetType
    n = Annotated[int, meta(ge=0, le=MAX_INT)]
    rid = n | Annotated[str, meta(min_length=1, max_length=MAX_RID_CHARS)]
    fields = [
        ("step", int), ("plan", list[tuple[rid, n]]), ("emitted", list[rid]), ("finished", list[rid]),
        ("add", list[tuple[rid, n, n]] | absent, unset),
        ("refuse", Any, unset),  # any JSON values: checked by tracefile's own reading
        ("admit", list[tuple[rid, n]] | absent, unset),
        ("preempt", list[tuple[rid, Literal["recompute", "swap"]]] | absent, unset),
        ("ran", bool | absent, unset),
    ]
    return msgspec.json.Decoder(msgspec.defstruct("StepLineV2", fields, forbid_unknown_fields=True))


DECODER = _decoder()
DECODER_V2 = _decoder_v2()
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
    colons = text.count(b":" if type(text) is bytes else ":")  # type: ignore[arg-type]
    if colons == REQUIRED:  # the common line: each field decoded has a key, so colons >= fields >= REQUIRED
        return TraceStep(data.step, data.plan, data.emitted, data.finished, EMPTY, EMPTY, None, False,
                         EMPTY, EMPTY, EMPTY)
    unset = msgspec.UNSET
    optional = (data.add, data.refuse, data.budget, data.stop, data.cancel, data.cancel_pending)
    if colons != REQUIRED + len(optional) - optional.count(unset):
        return None  # a key twice, a nested object, or a colon inside a string: the strict reader decides
    add = EMPTY if data.add is unset else data.add
    refuse = EMPTY if data.refuse is unset else tracefile._refuse(line, data.refuse)
    priorities = (bool(add) and max(map(len, add)) == 4) or any(len(entry) == 4 for entry in refuse)  # an add: 3 or 4
    budget = None if data.budget is unset else data.budget
    stop, cancel, pending = data.stop, data.cancel, data.cancel_pending  # LIFECYCLE_KEYS
    return TraceStep(data.step, data.plan, data.emitted, data.finished, add, refuse, budget, priorities,
                     [] if stop is unset else stop, [] if cancel is unset else cancel,
                     [] if pending is unset else pending)


def parse_line_v2(line: int, text: str | bytes, expected_step: int) -> EngineStep | EngineEnd:
    """As `v2.parse_line`: one line after a v2 header, a step numbered `expected_step` or the end."""
    item = _fast_v2(line, text, expected_step) if DECODER_V2 is not None else None
    if item is not None:
        return item
    from .v2 import parse_line  # here: v2 reads its records with this function

    return parse_line(line, text, expected_step)


def _fast_v2(line: int, text: str | bytes, expected_step: int) -> EngineStep | None:
    """The v2 step, or None where the strict reader must judge the line."""
    try:
        data = DECODER_V2.decode(text)
    except (msgspec.MsgspecError, ValueError, RecursionError):  # ValueError: a str msgspec cannot encode
        return None
    if data.step != expected_step:
        return None
    colons = text.count(b":" if type(text) is bytes else ":")  # type: ignore[arg-type]
    finished = [(rid, "length") for rid in data.finished] if data.finished else []
    if colons == REQUIRED:  # the common line ("ran" absent): each field decoded has a key, so colons >= fields
        return EngineStep(data.step, data.plan, data.emitted, finished, [], [], {}, [], [], {}, True)
    unset = msgspec.UNSET
    optional = (data.add, data.refuse, data.admit, data.preempt, data.ran)
    if colons != REQUIRED + len(optional) - optional.count(unset):
        return None  # also a key twice, or a colon inside a string rid: the strict reader decides
    ran = data.ran is not False
    if data.ran is True or (not ran and data.emitted):
        return None  # refused by the strict reader, with its message
    refuse = [] if data.refuse is unset else tracefile._refuse(line, data.refuse)
    return EngineStep(data.step, data.plan, data.emitted, finished, [] if data.add is unset else data.add, refuse,
                      {}, [] if data.admit is unset else data.admit, [] if data.preempt is unset else data.preempt,
                      {}, ran)
