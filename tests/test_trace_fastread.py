"""check-trace's fast reading of a step line (conformance/trace/fastread.py, msgspec) reads every line
as tracefile's strict reader does: the same step, or the same error naming the same field and value.
Each case is a line the shortcut must take, or one it must hand back (a key twice, NaN, a nested
object, a value out of range), shown refused or read by the strict reader alike."""

from __future__ import annotations

import os

import pytest

from stallfree.conformance.trace import fastread, tracefile
from stallfree.conformance.trace.tracefile import TraceError

msgspec_here = fastread.DECODER is not None


def test_msgspec_is_installed_where_extras_are_required() -> None:
    """scripts/venv.sh installs the fast extra (in all); without it the other tests here only check the
    strict reader against itself."""
    if os.environ.get("STALLFREE_REQUIRE_EXTRAS") == "1":
        assert msgspec_here, "msgspec (the fast extra) is required here but not installed"

TAKEN = [  # lines the shortcut reads itself
    '{"step": 0, "plan": [[0, 4]], "emitted": [0], "finished": []}',
    '{"step":0,"add":[[0,4,5]],"plan":[[0,4]],"emitted":[0],"finished":[]}',
    '{"step": 0, "add": [[0, 4, 5, 2]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "refuse": [[1, 2.5, "x", 3]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "budget": 7, "cancel": [1], "plan": [], "cancel_pending": [2], "stop": [0], "emitted": [], '
    '"finished": [0]}',
    '{"step": 0, "budget": null, "plan": [], "emitted": [], "finished": []}',
    '  {"step" : 0 , "plan" : [ ] , "emitted" : [ ], "finished":[]}  \n',
    '{"st\\u0065p": 0, "plan": [[9223372036854775807, 0]], "emitted": [], "finished": []}',
]
REFUSED = [  # lines the shortcut decodes, then refuses with tracefile's own check of "refuse"
    '{"step": 0, "refuse": [[1, 2]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "refuse": 5, "plan": [], "emitted": [], "finished": []}',
]
HANDED_BACK = [  # lines the strict reader must judge
    '{"step": 0, "plan": [], "emitted": [], "finished": [], "plan": [[0, 1]]}',  # a key twice
    '{"step": 0, "plan": [], "emitted": [], "finished": [], "step": 0}',
    '{"step": 0, "refuse": [[1, NaN, 3]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "refuse": [[1, Infinity, 3]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "refuse": [[1, {"a": 1}, 3]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "refuse": [[1, {"a": 1, "a": 2}, 3]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "refuse": [[1, "a:b", 3]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "refuse": [[1, 1e400, 3]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "refuse": [[1, "\\ud800", 3]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [[0, 9223372036854775808]], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [[0, -1]], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [[0, 1.0]], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [[true, 1]], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [[0, 1, 2]], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [], "emitted": [0], "finished": [], "extra": 1}',
    '{"step": 0, "plan": [], "emitted": [0]}',
    '{"step": 1, "plan": [], "emitted": [], "finished": []}',
    '{"step": false, "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "budget": 0, "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "add": [[0, 4]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "stop": "0", "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [], "emitted": [], "finished": []} x',
    '\ufeff{"step": 0, "plan": [], "emitted": [], "finished": []}',
    '{"end": true}',
    '{"end": true, "refuse": [[1, 2, 3]], "cancel": [4]}',
    '[1, 2]',
    '{"step": 0, "plan": [' * 3000,
    '{"step": 0, "plan": [], "emitted": [], "finished": [],}',
]


def _read(reader, text: str | bytes) -> object:
    """What `reader` makes of `text` as line 2, expecting step 0: the item, or its error's message."""
    try:
        return reader(2, text, 0)
    except TraceError as error:
        return f"TraceError: {error}"


@pytest.mark.parametrize("text", TAKEN + REFUSED + HANDED_BACK)
@pytest.mark.parametrize("as_bytes", [False, True])
def test_fast_reading_reads_as_the_strict_reader(text: str, as_bytes: bool) -> None:
    line = text.encode("utf-8", "surrogatepass") if as_bytes else text
    assert _read(fastread.parse_line, line) == _read(tracefile.parse_line, line)


@pytest.mark.skipif(not msgspec_here, reason="msgspec (the fast extra) is not installed")
@pytest.mark.parametrize("text", TAKEN)
def test_fast_reading_takes_a_well_formed_step(text: str) -> None:
    assert fastread._fast(2, text.encode(), 0) is not None


@pytest.mark.skipif(not msgspec_here, reason="msgspec (the fast extra) is not installed")
@pytest.mark.parametrize("text", HANDED_BACK)
def test_fast_reading_hands_back_what_it_cannot_prove(text: str) -> None:
    """A key twice is where msgspec alone would differ (it keeps the last): the colon count refuses it."""
    assert fastread._fast(2, text.encode("utf-8", "surrogatepass"), 0) is None


def test_a_duplicate_key_is_refused_naming_it() -> None:
    line = '{"step": 0, "plan": [], "emitted": [], "finished": [], "plan": [[0, 1]]}'
    with pytest.raises(TraceError, match="'plan' appears twice"):
        fastread.parse_line(2, line, 0)


V2_TAKEN = [
    '{"step": 0, "plan": [[0, 4]], "emitted": [0], "finished": []}',
    '{"step": 0, "add": [["a", 4, 5]], "plan": [["a", 4]], "emitted": ["a"], "finished": ["a"]}',
    '{"step": 0, "admit": [[1, 3]], "preempt": [[2, "swap"], [3, "recompute"]], "plan": [[1, 1]], "emitted": [], '
    '"finished": [], "ran": false}',
    '{"step": 0, "refuse": [[1, 2, 3]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [["' + "r" * 256 + '", 1]], "emitted": [], "finished": []}',
]
V2_HANDED_BACK = [
    '{"step": 0, "plan": [], "emitted": [], "finished": [], "emitted": [0]}',
    '{"step": 0, "plan": [["a:b", 1]], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [["' + "r" * 257 + '", 1]], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [["", 1]], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [[0, 1]], "emitted": [], "finished": [[0, "stop"]]}',
    '{"step": 0, "plan": [[0, 1]], "emitted": [], "finished": [[0, "later"]]}',
    '{"step": 0, "preempt": [[2, "drop"]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [[0, 1]], "emitted": [0], "finished": [], "ran": false}',
    '{"step": 0, "plan": [], "emitted": [], "finished": [], "ran": true}',
    '{"step": 0, "config": {"token_budget": 4}, "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "x": {"vllm": {"a": 1}}, "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "refuse": [[1, NaN, 3]], "plan": [], "emitted": [], "finished": []}',
    '{"step": 0, "plan": [[0, -1]], "emitted": [], "finished": []}',
    '{"step": 2, "plan": [], "emitted": [], "finished": []}',
    '{"end": true, "x": {"e": {}}}',
]


@pytest.mark.parametrize("text", V2_TAKEN + V2_HANDED_BACK)
@pytest.mark.parametrize("as_bytes", [False, True])
def test_fast_v2_reading_reads_as_the_strict_reader(text: str, as_bytes: bool) -> None:
    from stallfree.conformance.trace import v2

    line = text.encode() if as_bytes else text
    assert _read(fastread.parse_line_v2, line) == _read(v2.parse_line, line)


@pytest.mark.skipif(not msgspec_here, reason="msgspec (the fast extra) is not installed")
def test_fast_v2_reading_takes_well_formed_steps_and_hands_back_the_rest() -> None:
    assert all(fastread._fast_v2(2, text.encode(), 0) is not None for text in V2_TAKEN)
    assert all(fastread._fast_v2(2, text.encode(), 0) is None for text in V2_HANDED_BACK)
