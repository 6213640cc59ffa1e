"""The simulator with a max_new cap: each request reserves max_new = the cap and stops at its real
output length (complete(plan, stopped)), so the reservation's cost can be measured against the
oracle that reserves exactly the real length; the monitor judges every step of it (TOKENS, KV)."""

from __future__ import annotations

import pytest

from stallfree.costs import Deployment, Roofline, gpu, model
from stallfree.main import main
from stallfree.sim.policies import factory
from stallfree.sim.simulator import simulate
from stallfree.sim.summary import report, summarise
from stallfree.sim.trace import Trace, TraceRequest
from stallfree.spec import Config, Unsupported
from stallfree.testing.plain import Plain

FLOOR = Roofline(Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8"), "floor")


def trace_of(*requests: tuple[float, int, int]) -> Trace:
    return Trace("test", tuple(TraceRequest(rid, t, p, m) for rid, (t, p, m) in enumerate(requests)))


TRACE = trace_of((0.0, 8, 3), (0.0, 4, 10), (0.0, 6, 1), (0.001, 5, 20))


def test_TOKENS_each_request_stops_at_its_real_length_under_the_cap() -> None:
    result = simulate(TRACE, factory("reference"), Config(16, 4, 200), FLOOR, check=True, max_new_cap=12)
    assert [s.num_emitted for s in result.streams] == [3, 10, 1, 12]  # the last runs to the cap
    assert result.num_finished == 4
    summary = summarise(result)
    assert summary.max_new_cap == 12 and summary.num_truncated == 1


def test_KV_reserving_for_the_cap_uses_less_of_what_it_reserves_than_the_oracle() -> None:
    oracle = summarise(simulate(TRACE, factory("reference"), Config(16, 4, 200), FLOOR))
    capped = summarise(simulate(TRACE, factory("reference"), Config(16, 4, 200), FLOOR, max_new_cap=40))
    assert capped.kv_reserved > oracle.kv_reserved and capped.kv_use_of_reserved < oracle.kv_use_of_reserved
    assert oracle.kv_use_of_reserved <= 1.0 and capped.kv_used == pytest.approx(oracle.kv_used, rel=0.5)
    assert any("reserves max_new = 40 (the cap)" in line for line in report(capped))
    assert any("reserves its real output length (the oracle)" in line for line in report(oracle))


def test_KV_a_cap_too_large_for_K_makes_every_request_never_fit() -> None:
    result = simulate(TRACE, factory("reference"), Config(16, 4, 30), FLOOR, max_new_cap=40)
    assert not result.streams and len(result.skipped) == 4 and "NEVER-FIT" in result.skipped[0].reason


def test_a_scheduler_that_cannot_be_told_of_a_stop_is_refused() -> None:
    with pytest.raises(Unsupported, match="Plain does not support 'stop'"):
        simulate(TRACE, Plain, Config(16, 4, 200), FLOOR, max_new_cap=12)


def test_simulate_max_new_cap_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--trace", "code", "--limit", "200", "--max-new-cap", "1024", "--quiet",
                 "--check"]) == 0
    out = capsys.readouterr().out
    assert "each request reserves max_new = 1,024 (the cap), stopping at its real length" in out
    assert "KV over busy time:" in out and "rules: all held on every step (monitor)" in out
    assert main(["simulate", "--trace", "code", "--limit", "50", "--max-new-cap", "1024", "--quiet",
                 "--scheduler", "stallfree.testing.plain:Plain"]) == 2
    assert "does not support 'stop'" in capsys.readouterr().err


def test_the_cap_plot_is_drawn(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    from stallfree.sim.plots import plot_caps

    rows = [summarise(simulate(TRACE, factory("reference"), Config(16, 4, 200), FLOOR, max_new_cap=cap)).to_json()
            for cap in (None, 20, 40)]
    path = plot_caps(rows, tmp_path / "caps.png")
    assert path.stat().st_size > 10_000


def test_a_distribution_of_caps_gives_each_request_one_drawn_by_its_rid() -> None:
    result = simulate(TRACE, factory("reference"), Config(16, 4, 400), FLOOR, check=True, max_new_caps=(12, 40))
    reserved = [s.reserved_new for s in result.streams]
    assert set(reserved) <= {12, 40} and len(set(reserved)) == 2  # both drawn over these four rids
    again = simulate(TRACE, factory("reference"), Config(16, 4, 400), FLOOR, max_new_caps=(12, 40))
    assert [s.reserved_new for s in again.streams] == reserved  # seeded by the rid: repeatable
    assert [s.num_emitted for s in result.streams] == [min(m, r) for m, r in zip((3, 10, 1, 20), reserved, strict=True)]
    assert any("max_new = one of 12, 40 (drawn per request)" in line for line in report(summarise(result)))


def test_a_bad_cap_list_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["simulate", "--trace", "code", "--max-new-cap", "512,x"])
    assert ended.value.code == 2
    assert "--max-new-cap: expected N or N,N,... (ints >= 1), got '512,x'" in capsys.readouterr().err
