"""WORK-CONSERVING in the v1 checker's shortcut (`cleanstep_v1._policy`): a step that leaves budget unused
while an admitted request's chunk stops short of its prompt is a break, and the shortcut hands it to
the monitor, which names it. The shortcut reads "a chunk that does not end its prompt" from its counts
of chunks and completing ones; planted out, the same comparison catches it."""

from __future__ import annotations

import inspect
import json
import types

import pytest
from test_trace_shortcut import differences

from stallfree.conformance.trace import cleanstep_v1

CHUNK_TEST = " or len(clean.completing) < len(clean.prefills):"


def short_chunk_trace() -> list[bytes]:
    """B = 8: request 0 (prompt 6) admitted with a chunk of 3, and 5 tokens of budget left unused."""
    header = {"stallfree_trace": 1, "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 1000}}
    step = {"step": 0, "add": [[0, 6, 2]], "plan": [[0, 3]], "emitted": [], "finished": []}
    return [(json.dumps(line) + "\n").encode() for line in (header, step, {"end": True})]


def test_a_short_chunk_with_budget_left_is_judged_alike_with_the_shortcut() -> None:
    found, _, broken = differences(short_chunk_trace(), "WORK-CONSERVING")
    assert not found, found
    assert "WORK-CONSERVING" in broken


def test_a_shortcut_without_the_short_chunk_test_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    source = inspect.getsource(cleanstep_v1)
    assert source.count(CHUNK_TEST) == 1
    module = types.ModuleType("planted")
    module.__package__ = cleanstep_v1.__package__
    exec(compile(source.replace(CHUNK_TEST, ":"), "planted", "exec"), module.__dict__)
    monkeypatch.setattr(cleanstep_v1, "_policy", module._policy)
    found, _, _ = differences(short_chunk_trace(), "WORK-CONSERVING")
    assert found, "a shortcut that lets a short chunk leave budget unused gave the monitor's verdicts"
