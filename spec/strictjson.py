"""The one JSON reader for every input stallfree judges (workloads, traces, engine steps): strict
where Python's json is lenient, so that what is judged is what the file says.

- A key given twice in one object is refused, naming it: with json's last-wins, a breaking "plan"
  could be shadowed by an honest one written after it.
- NaN, Infinity and -Infinity (not JSON, though json reads them) are refused, naming the word.
- A value nested too deeply for the parser is refused as an input error, not a crash.
Each refusal is a ValueError, as json's own are."""

from __future__ import annotations

import json
from typing import Any


class StrictJSONError(ValueError):
    """Valid to Python's json, refused here: a duplicate key, a non-finite number, too deep a nesting."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise StrictJSONError(f"the key {key[:60]!r} appears twice in one object")
        data[key] = value
    return data


def _constant(word: str) -> Any:
    raise StrictJSONError(f"{word} is not a JSON number")


DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant)
scan_once = DECODER.scan_once  # type: ignore[attr-defined]  # the core (set at init): its caller checks the rest


def loads(text: str | bytes) -> Any:
    """`text` as JSON, strictly (see the module doc); raises ValueError (json.JSONDecodeError,
    StrictJSONError) naming what is wrong."""
    if isinstance(text, bytes):
        text = text.decode()
    try:
        return DECODER.decode(text)
    except RecursionError:
        raise StrictJSONError("JSON nested too deeply to read") from None
