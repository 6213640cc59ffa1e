"""`stallfree import-trace` no longer trusts an inferred cached prefix silently: each admission's claim
is checked against the request's own blocks, trusted and listed, or refused where no cache could have
held it, and the command says which. A block-aligned skip planted into a recorded vLLM trace, which
whole-block inference alone took as a cache hit, is refused and caught by the checker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stallfree.conformance.engines.cache_claims import CacheClaims, verify
from stallfree.conformance.engines.import_vllm import convert, load_config, load_workload, read_steps
from stallfree.conformance.trace.enginecheck import check_engine_trace
from stallfree.conformance.trace.v2 import EngineStep, TraceWriterV2
from stallfree.main import main

TRACES = Path(__file__).parent / "data" / "engine-traces"
W1, W4 = "w1_budget8_decode_plus_20prompt", "w4_kv_pressure_preempt"


def raw(name: str) -> list[dict[str, object]]:
    return [json.loads(x) for x in (TRACES / "vllm-0.33-v1" / f"{name}.jsonl").read_text().splitlines()]


def imported(name: str, steps: list[dict[str, object]]) -> tuple[list[str], CacheClaims]:
    import io

    config = load_config(TRACES / "workloads" / f"{name}.config.json")
    claims = CacheClaims()
    out = io.StringIO()
    writer = TraceWriterV2(out, config)
    for step in verify(convert(read_steps(json.dumps(s) for s in steps), load_workload(
            TRACES / "workloads" / f"{name}.json")), config.block_size or 1, claims):
        writer.step(step)
    writer.end()
    return out.getvalue().splitlines(), claims


def skip_a_block(steps: list[dict[str, object]]) -> list[dict[str, object]]:
    """w1 with rid 1's 20-token prompt prefilled as 4 tokens at step 2: the first 16 (one whole block)
    skipped, though no request had 16 tokens in KV to be cached. Its 3 tokens then come at steps 2-4."""
    planted = [dict(s) for s in steps]
    for s in planted[2:]:
        s["scheduled"] = [e for e in s["scheduled"] if e[0] != 1]  # type: ignore[union-attr]
        s["emitted"] = [r for r in s["emitted"] if r != 1]  # type: ignore[union-attr]
        s["finished"] = [r for r in s["finished"] if r != 1]  # type: ignore[union-attr]
    for step, (n, kind) in zip((2, 3, 4), ((4, "prefill"), (1, "decode"), (1, "decode")), strict=True):
        planted[step]["scheduled"] = [*planted[step]["scheduled"], [1, n, kind]]  # type: ignore[list-item]
        planted[step]["emitted"] = [*planted[step]["emitted"], 1]  # type: ignore[list-item]
    planted[4]["finished"] = [1]
    return planted


def test_a_resumed_requests_cache_hit_is_checked_against_its_own_blocks() -> None:
    lines, claims = imported(W4, raw(W4))
    assert claims.checked == [(24, 1, 32)] and not claims.trusted and not claims.refused
    assert check_engine_trace(lines, ["PREFILL-ONCE", "FIRST-TOKEN"]).ok


def test_a_planted_block_aligned_skip_is_refused_and_caught() -> None:
    lines, claims = imported(W1, skip_a_block(raw(W1)))
    assert claims.refused == [(2, 1, 16, "no request had 16 tokens in KV by then")]
    verdict = check_engine_trace(lines, ["PREFILL-ONCE", "FIRST-TOKEN"])
    assert set(verdict.violations) == {"FIRST-TOKEN"} and verdict.violations["FIRST-TOKEN"][0].step == 2


def test_a_claim_another_request_could_have_served_is_trusted_and_listed() -> None:
    # b claims a block of 16 once a has 16 tokens in KV: possible (a shared prompt), not provable; c
    # claims 32, more than anyone ever had: refused; a claim of 8 is not a whole block: refused
    steps = [EngineStep(0, [("a", 16)], [], [], add=[("a", 20, 2)], admit=[("a", 0)]),
             EngineStep(1, [("a", 4), ("b", 4)], ["a", "b"], [], add=[("b", 20, 2), ("c", 40, 2)],
                        admit=[("b", 16)]),
             EngineStep(2, [("c", 8)], [], [], admit=[("c", 32)]),
             EngineStep(3, [("c", 8)], [], [], admit=[("d", 8)])]
    claims = CacheClaims()
    written = [s.admit for s in verify(steps, 16, claims)]
    assert claims.trusted == [(1, "b", 16)] and not claims.checked
    assert claims.refused == [(2, "c", 32, "no request had 32 tokens in KV by then"),
                              (3, "d", 8, "not a whole number of blocks")]
    assert written == [[("a", 0)], [("b", 16)], [("c", 0)], [("d", 0)]]


def test_import_trace_says_what_it_inferred(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "w4.v2.jsonl"
    assert main(["import-trace", str(TRACES / "vllm-0.33-v1" / f"{W4}.jsonl"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "cached prefixes inferred for 1 admission(s): 1 checked against the request's own blocks" in err
    header = json.loads(out.read_text().splitlines()[0])
    assert header["meta"]["cached"] == {"source": "inferred", "checked": [[24, 1, 32]], "trusted": [], "refused": []}
    planted = tmp_path / "vllm" / "w1.jsonl"
    planted.parent.mkdir()
    planted.write_text("\n".join(json.dumps(s) for s in skip_a_block(raw(W1))) + "\n")
    where = ["--workload", str(TRACES / "workloads" / f"{W1}.json"),
             "--config", str(TRACES / "workloads" / f"{W1}.config.json")]
    assert main(["import-trace", str(planted), *where, "-o", str(tmp_path / "w1.v2.jsonl")]) == 0
    assert "1 refused, no cache could hold them" in capsys.readouterr().err
    assert main(["check-trace", str(tmp_path / "w1.v2.jsonl"), "--quiet"]) == 1
