"""The two memory designs in the simulator under the cap model: reservation holds the cap and runs
fewer requests at once; paged holds what is computed, and where the pool runs short it preempts and
pays for recompute; both finish every request with its real output length."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import Any

import pytest

from stallfree.costs import Deployment, Roofline
from stallfree.costs.presets import gpu, model
from stallfree.paged import Scheduler as Paged
from stallfree.reference import Scheduler as Reference
from stallfree.sim.designs import DesignSimulation, DesignStats, run_design
from stallfree.sim.simulator import simulate
from stallfree.sim.summary import summarise
from stallfree.sim.trace import Trace, TraceRequest
from stallfree.spec import Config

ROOFLINE = Roofline(Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8", "bf16"), "full")


def burst(n: int, prompt: int, output: int) -> Trace:
    return Trace("burst", tuple(TraceRequest(i, 0.0, prompt, output) for i in range(n)))


def test_the_cap_holds_kv_under_reservation_and_not_under_paged() -> None:
    trace = burst(40, 100, 20)  # real outputs of 20 tokens, sent with max_tokens 400
    config = Config(token_budget=512, max_seqs=64, kv_tokens=5_000)
    res = run_design("reservation", trace, config, ROOFLINE, cap=400)
    pag = run_design("paged", trace, config, ROOFLINE, cap=400)
    assert res.summary.num_finished == pag.summary.num_finished == 40
    assert res.summary.output_tokens == pag.summary.output_tokens == 40 * 20  # stopped at the real length
    assert res.stats.max_running <= 5_000 // 500  # prompt + cap = 500 tokens reserved each
    assert pag.stats.max_running > 2 * res.stats.max_running
    assert res.stats.kv_held > 3 * res.stats.kv_used  # reserved, unused
    assert pag.stats.kv_held < 1.2 * pag.stats.kv_used + 16 * 64 / 5_000  # blocks: at most one partial block each
    assert pag.summary.clock < res.summary.clock


def test_paged_preempts_when_the_pool_runs_short_and_the_recompute_is_priced() -> None:
    trace = burst(30, 64, 200)
    config = Config(token_budget=512, max_seqs=64, kv_tokens=4_096)
    pag = run_design("paged", trace, config, ROOFLINE)
    assert pag.summary.num_finished == 30 and pag.summary.output_tokens == 30 * 200  # no token lost or repeated
    assert pag.stats.preemptions > 0 and pag.stats.recomputed_tokens > 0 and pag.stats.recompute_seconds > 0
    # Every running request is in every plan here, so the summary's KV used over the plan is the KV the
    # design holds computed, preempted requests' forgotten: two accountings of one quantity.
    assert pag.summary.kv_used == pytest.approx(pag.stats.kv_used * config.kv_tokens)
    assert pag.summary.mean_running == pytest.approx(pag.stats.mean_running)
    res = run_design("reservation", trace, config, ROOFLINE)
    assert res.stats.preemptions == 0 and res.stats.recomputed_tokens == 0


def test_without_memory_pressure_the_designs_schedule_alike() -> None:
    trace = burst(10, 50, 10)
    config = Config(token_budget=256, max_seqs=16, kv_tokens=100_000)
    res = run_design("reservation", trace, config, ROOFLINE)
    pag = run_design("paged", trace, config, ROOFLINE)
    assert res.summary.clock == pytest.approx(pag.summary.clock)
    assert res.summary.latency["ttft"] == pag.summary.latency["ttft"]
    kv = ("kv_reserved", "kv_used", "mean_running", "max_running")  # the same plans: the same per-plan figures
    assert [getattr(pag.summary, k) for k in kv] == pytest.approx([getattr(res.summary, k) for k in kv])
    assert pag.summary.kv_reserved > pag.summary.kv_used > 0 and pag.summary.max_running == 10


def test_the_design_comparison_and_simulate_max_new_cap_are_one_cap_model() -> None:
    """The reservation side of the comparison is `simulate --max-new-cap` on the reference: the same run."""
    trace = burst(40, 100, 20)
    config = Config(token_budget=512, max_seqs=64, kv_tokens=5_000)
    res = run_design("reservation", trace, config, ROOFLINE, cap=400)
    alone = simulate(trace, Reference, config, ROOFLINE, max_new_cap=400)
    assert res.summary.clock == alone.clock and res.summary.output_tokens == 40 * 20
    assert [s.first_token for s in res.result.streams] == [s.first_token for s in alone.streams]
    assert res.stats.max_running == alone.max_running <= 5_000 // 500  # prompt + cap reserved, not + 20
    kv = ("kv_reserved", "kv_used", "mean_running", "max_running", "kv_use_of_reserved")
    plain = summarise(alone)
    assert [getattr(res.summary, k) for k in kv] == [getattr(plain, k) for k in kv]
    assert 0 < res.summary.kv_use_of_reserved < 0.5  # 120 of 500 reserved at most: the cap held, unused


def test_a_cap_that_cannot_fit_skips_the_request_for_both_designs() -> None:
    trace = Trace("t", (TraceRequest(0, 0.0, 10, 5), TraceRequest(1, 0.0, 111, 1)))
    for design in ("reservation", "paged"):
        run = run_design(design, trace, Config(8, 2, 200), ROOFLINE, cap=90)
        assert [s.request.rid for s in run.result.streams] == [0]  # 111 + 90 > 200: skipped
        assert run.summary.output_tokens == 5  # stopped at its real length, not run to the cap
    with pytest.raises(ValueError, match="design 'x' is unknown"):
        run_design("x", burst(1, 1, 1), Config(1, 1, 10), ROOFLINE)


def endless(entry: Any) -> Iterator[Any]:
    """Far more entries than any step has; read to its end, it was not bounded."""
    for _ in range(100_000):
        yield entry
    raise AssertionError("read to the end: the simulation did not bound it")


class EndlessPlan(Paged):
    def schedule(self) -> Any:
        return chain(super().schedule(), endless((0, 1)))


class EndlessPreempted(Paged):
    def schedule(self) -> Any:
        plan = super().schedule()
        return type("Plan", (), {"__iter__": lambda _: iter(plan), "preempted": endless(0)})()


@pytest.mark.parametrize("factory", [EndlessPlan, EndlessPreempted])
def test_the_design_simulation_bounds_an_endless_plan(factory: type) -> None:
    stats = DesignStats("paged", None, 1.0, kv_tokens=1_000)
    sim = DesignSimulation(burst(3, 10, 5), factory, Config(64, 4, 1_000), ROOFLINE, stats, lambda s: 0)
    with pytest.raises(ValueError, match=r"more entries than there are requests \(3\): not a step"):
        sim.run()
