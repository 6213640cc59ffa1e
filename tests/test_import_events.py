"""`stallfree import-trace --from events`: a second input format, one JSON line per scheduling event,
that any engine can log from where its scheduler decides. A recorded vLLM run written as events
converts to the same v2 trace as its step form, preemption and cached resume included; an engine's
claimed cache hit no cache could hold is refused and caught; a malformed event names its line and
field; a log with no end event leaves PROGRESS at the end not judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_import_trace_cache import W4, imported, raw

from stallfree.conformance.engines.import_events import read_events
from stallfree.conformance.trace.enginecheck import check_engine_trace
from stallfree.conformance.trace.tracefile import TraceError
from stallfree.main import main

TRACES = Path(__file__).parent / "data" / "engine-traces"
CONFIG = TRACES / "workloads" / f"{W4}.config.json"


def as_events(v2_lines: list[str]) -> list[str]:
    """The steps of a v2 trace, each fact one event line (what an engine would log)."""
    events = []
    for data in map(json.loads, v2_lines[1:]):
        if data.get("end"):
            events.append({"step": len(events), "event": "end"})
            continue
        n = data["step"]
        step = [{"step": n, "event": "arrive", "rid": r, "prompt_len": p, "max_new": m}
                for r, p, m in data.get("add", [])]
        step += [{"step": n, "event": "preempt", "rid": r, "kind": k} for r, k in data.get("preempt", [])]
        step += [{"step": n, "event": "admit", "rid": r, "cached": c} for r, c in data.get("admit", [])]
        step += [{"step": n, "event": "schedule", "rid": r, "tokens": t} for r, t in data["plan"]]
        step += [{"step": n, "event": "emit", "rid": r} for r in data["emitted"]]
        step += [{"step": n, "event": "finish", "rid": f, "reason": "length"} if not isinstance(f, list)
                 else {"step": n, "event": "finish", "rid": f[0], "reason": f[1]} for f in data["finished"]]
        events += step or [{"step": n, "event": "step"}]
    return [json.dumps(e) for e in events]


def convert(tmp_path: Path, events: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    log = tmp_path / "events.jsonl"
    log.write_text("\n".join(events) + "\n")
    out = tmp_path / "v2.jsonl"
    status = main(["import-trace", "--from", "events", str(log), "--config", str(CONFIG), "-o", str(out)])
    return status, out.read_text().splitlines() if out.exists() else [], capsys.readouterr().err


def test_a_vllm_run_logged_as_events_converts_to_the_same_trace(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    lines, _ = imported(W4, raw(W4))
    status, converted, err = convert(tmp_path, as_events(lines), capsys)
    assert status == 0 and converted[1:] == lines[1:]
    assert "cached prefixes claimed for 1 admission(s): 1 checked" in err
    assert check_engine_trace(converted, ["PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", "PROGRESS"]).ok


def test_a_claimed_hit_no_cache_could_hold_is_refused_and_caught(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    events = as_events(imported(W4, raw(W4))[0])
    first = next(i for i, e in enumerate(events) if '"admit"' in e)
    data = json.loads(events[first])  # rid 0's admission at step 0: nothing was ever cached
    events[first] = json.dumps({**data, "cached": 16})
    skip = next(i for i, e in enumerate(events) if '"schedule"' in e and f'"rid": {data["rid"]}' in e)
    events[skip] = json.dumps({**json.loads(events[skip]), "tokens": 0})
    status, converted, err = convert(tmp_path, events, capsys)
    assert status == 0 and "1 refused, no cache could hold them" in err
    header = json.loads(converted[0])
    assert header["meta"]["cached"]["refused"] == [[0, data["rid"], 16, "no request had 16 tokens in KV by then"]]
    assert not check_engine_trace(converted, ["ONE-ENTRY", "FIRST-TOKEN"]).ok


@pytest.mark.parametrize(("line", "words"), [
    ('{"step": 0, "event": "launch", "rid": 0}', "whose event is one of arrive"),
    ('{"step": 0, "event": "schedule", "rid": 0}', "schedule event's tokens must be an int >= 0, got None"),
    ('{"step": 0, "event": "emit", "rid": 0, "tokens": 1}', "emit event has no field 'tokens'"),
    ('{"step": 0, "event": "finish", "rid": 0, "reason": "done"}', "reason must be one of length, stop, cancel"),
    ('{"step": 2, "event": "emit", "rid": 0}', "step must be -1 or 0"),
    ('{"step": 0, "event": "emit", "rid": ""}', "rid must be an int >= 0 or a non-empty string"),
    ("[1", "not valid JSON"),
])
def test_a_malformed_event_names_its_line_and_field(line: str, words: str) -> None:
    with pytest.raises(TraceError, match="line 1") as error:
        read_events([line])
    assert words in str(error.value)


def test_an_event_log_without_an_end_leaves_progress_at_the_end_unjudged(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    events = [e for e in as_events(imported(W4, raw(W4))[0]) if '"end"' not in e]
    status, converted, _ = convert(tmp_path, events, capsys)
    assert status == 0 and '"end"' not in converted[-1]
    assert main(["check-trace", str(tmp_path / "v2.jsonl"), "--profile", "safety", "--quiet"]) == 0
    events[3:3] = ['{"step": 0, "event": "emit", "rid": 0, "x": 1}']
    status, _, err = convert(tmp_path, events, capsys)
    assert status == 2 and "line 4: an emit event has no field 'x'" in err and "Traceback" not in err
