"""The simulator: step timing, the contract's hand trace in seconds, NEVER-FIT reporting, idle
gaps, the bound on a stream's worst gap under the reference (DECODE-FIRST), and its negative controls."""

from __future__ import annotations

import pytest

from stallfree.costs import Deployment, Roofline, full_step, gpu, model
from stallfree.faults import FAULTS
from stallfree.sim import timeline
from stallfree.sim.policies import factory
from stallfree.sim.simulator import Stalled, simulate
from stallfree.sim.stats import quantile, spread
from stallfree.sim.summary import report, summarise
from stallfree.sim.trace import Trace, TraceRequest, load
from stallfree.spec import Config, RuleViolation
from stallfree.variants import Stepwise

DEPLOYMENT = Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8")
FLOOR = Roofline(DEPLOYMENT, "floor")
FULL = Roofline(DEPLOYMENT, "full")
SLICE = 300  # requests of a shipped trace: enough for every kind of step, fast in CI
SERVING = Config(token_budget=2048, max_seqs=256, kv_tokens=DEPLOYMENT.kv_tokens)
STEP = FLOOR.decode_floor_seconds  # a step of at most ~2,900 tokens costs the weight read in floor mode


def trace_of(*requests: tuple[float, int, int]) -> Trace:
    return Trace("test", tuple(TraceRequest(rid, t, p, m) for rid, (t, p, m) in enumerate(requests)))


def test_hand_trace_in_seconds() -> None:
    """The contract's hand trace: budget 8, one request decoding, a 20-token prompt arriving is
    prefilled in chunks of 7, 7 and 6 and its first token comes out of the third of those steps."""
    trace = trace_of((0.0, 8, 6), (STEP / 2, 20, 3))
    result = simulate(trace, factory("reference"), Config(8, 4, 64), FLOOR, record=True)
    assert result.steps is not None
    assert [s.num_prefill for s in result.steps[:4]] == [8, 7, 7, 6]
    assert [s.num_decodes for s in result.steps[:4]] == [0, 1, 1, 1]
    first, second = result.streams
    assert second.admitted == pytest.approx(STEP)  # it arrived during step 0, ran from step 1
    assert second.first_token == pytest.approx(4 * STEP)
    assert second.ttft == pytest.approx(4 * STEP - STEP / 2)
    assert second.queueing == pytest.approx(STEP / 2)
    assert first.first_token == pytest.approx(STEP)
    assert first.max_gap == pytest.approx(STEP)  # it decoded on every step, prompt arriving or not
    assert [s.num_emitted for s in result.streams] == [6, 3]


def test_never_fit_requests_are_reported_and_skipped() -> None:
    trace = trace_of((0.0, 10, 5), (0.0, 90, 20), (0.1, 30, 5), (0.2, 200, 1))
    result = simulate(trace, factory("reference"), Config(64, 4, 100), FLOOR)
    assert [s.request.rid for s in result.skipped] == [1, 3]
    assert all("NEVER-FIT" in s.reason and "exceeds kv_tokens=100" in s.reason for s in result.skipped)
    assert [s.request.rid for s in result.streams] == [0, 2]
    assert result.num_finished == 2
    lines = report(summarise(result))
    assert any("2 skipped" in line for line in lines)
    assert any("skipped rid 1: NEVER-FIT" in line for line in lines)


def test_idle_gaps_are_skipped() -> None:
    trace = trace_of((0.0, 100, 4), (10_000.0, 100, 4))
    result = simulate(trace, factory("reference"), SERVING, FLOOR)
    assert len(result.step_tokens) == 8  # one prefill step and three decodes each; no idle steps
    assert result.clock == pytest.approx(10_000 + 4 * STEP)
    assert result.busy_seconds == pytest.approx(8 * STEP)


@pytest.mark.parametrize("name", ["conv", "code"])
def test_latencies_are_consistent(name: str) -> None:
    trace = load(name).head(SLICE)
    result = simulate(trace, factory("reference"), SERVING, FULL)
    assert result.num_finished == SLICE and not result.skipped
    for s in result.streams:
        assert s.num_prefilled == s.prompt_len and s.num_emitted == s.max_new
        assert s.queueing is not None and s.ttft is not None and s.e2e is not None
        assert 0 <= s.queueing < s.ttft <= s.e2e
        if s.max_new >= 2:
            assert s.tpot is not None and 0 < s.tpot <= s.max_gap + 1e-12
    summary = summarise(result)
    assert summary.output_tokens == sum(r.max_new for r in trace.requests)
    assert summary.prompt_tokens == sum(r.prompt_len for r in trace.requests)
    assert summary.budget_use is not None and summary.budget_use.max <= 1.0  # BUDGET


@pytest.mark.parametrize("name", ["conv", "code"])
@pytest.mark.parametrize("roofline", [FLOOR, FULL], ids=["floor", "full"])
def test_decode_first_bounds_the_worst_gap_by_one_step(name: str, roofline: Roofline) -> None:
    """DECODE-FIRST (with READY-WITHIN-BUDGET): every running stream gets a token every step, so the
    longest wait between two of its tokens is one step, and no step at budget B outlasts worst_step."""
    result = simulate(load(name).head(SLICE), factory("reference"), SERVING, roofline)
    summary = summarise(result)
    assert summary.latency["max_gap"] is not None
    assert summary.latency["max_gap"].max <= result.longest_step + 1e-12
    assert result.longest_step <= summary.step_bound + 1e-12
    if roofline is FLOOR:  # the floor's bound is the contract's: a full step of B tokens
        assert summary.step_bound == max(full_step(FLOOR, SERVING.token_budget), FLOOR.decode_floor_seconds)


@pytest.mark.parametrize("policy", ["prefill-first", "unchunked"])
def test_worst_gap_bound_fails_without_decode_first(policy: str) -> None:
    """Negative control: both prefill-first policies break the bound the reference keeps."""
    reference = timeline.run("reference", FLOOR, 2048)
    other = timeline.run(policy, FLOOR, 2048)
    bound = summarise(reference.result).step_bound
    gap = {tl.policy: max(s.max_gap for s in tl.result.streams[:-1]) for tl in (reference, other)}
    assert gap["reference"] <= bound + 1e-12
    assert gap[policy] > bound
    assert gap[policy] > other.result.longest_step  # a stream waits more than one step
    assert gap[policy] > 10 * gap["reference"]


def test_check_passes_on_the_reference() -> None:
    result = simulate(load("code").head(100), factory("reference"), SERVING, FULL, check=True)
    assert result.num_finished == 100


@pytest.mark.parametrize(("policy", "rule"), [("unchunked", "BUDGET"), ("prefill-first", "DECODE-FIRST")])
def test_check_catches_the_variants(policy: str, rule: str) -> None:
    with pytest.raises(RuleViolation) as error:
        simulate(load("code").head(100), factory(policy), SERVING, FULL, check=True)
    assert error.value.rule == rule


class NeverPlans(Stepwise):
    def schedule(self) -> list[tuple[int, int]]:
        return []


def test_a_scheduler_that_stops_planning_is_reported() -> None:
    with pytest.raises(Stalled, match="PROGRESS"):
        simulate(trace_of((0.0, 10, 2), (1.0, 10, 2)), NeverPlans, SERVING, FLOOR)


def test_empty_plans_cost_no_time() -> None:
    trace = trace_of((0.0, 10, 9))
    stalling = simulate(trace, FAULTS["PROGRESS"], SERVING, FLOOR)
    steady = simulate(trace, factory("reference"), SERVING, FLOOR)
    assert stalling.num_finished == 1
    assert stalling.clock == pytest.approx(steady.clock)
    with pytest.raises(RuleViolation) as error:
        simulate(trace, FAULTS["PROGRESS"], SERVING, FLOOR, check=True)
    assert error.value.rule == "PROGRESS"


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    s = spread(reversed(values))
    assert s is not None
    assert (s.count, s.p50, s.p90, s.p99, s.max, s.mean) == (100, 50.0, 90.0, 99.0, 100.0, 50.5)
    assert quantile([3.0], 0.99) == 3.0
    assert spread([None, None]) is None


def test_kv_used_counts_the_positions_computed() -> None:
    """A 10-token prompt emitting 5 tokens: 10 positions after its prefill, one more per decode (the
    token fed in); its last token is never fed, so 14 of its 15 reserved positions are ever used."""
    result = simulate(trace_of((0.0, 10, 5)), factory("reference"), Config(64, 4, 100), FULL, record=True)
    assert list(result.kv_timeline[1::3]) == [15] * 5  # reserved: prompt_len + max_new
    assert list(result.kv_timeline[2::3]) == [10, 11, 12, 13, 14]
    seconds = [s.seconds for s in result.steps or []]
    assert summarise(result).kv_used == pytest.approx(sum(u * t for u, t in zip(range(10, 15), seconds, strict=True))
                                                      / sum(seconds))


def test_a_recording_run_times_every_token_at_the_end_of_its_step() -> None:
    """A recording run keeps each stream's token times: one a token, each the end of the step that
    emitted it (the hand trace: the decoding request's tokens at steps 0 to 5, the chunked prompt's
    first at the end of its third chunk); an unrecorded run keeps none."""
    trace = trace_of((0.0, 8, 6), (STEP / 2, 20, 3))
    result = simulate(trace, factory("reference"), Config(8, 4, 64), FLOOR, record=True)
    assert result.steps is not None
    ends = [s.start + s.seconds for s in result.steps]
    first, second = result.streams
    assert first.token_times == ends[:6]
    assert second.token_times == ends[3:6]
    assert second.token_times[0] == second.first_token and second.token_times[-1] == second.last_token
    plain = simulate(trace, factory("reference"), Config(8, 4, 64), FLOOR)
    assert [s.token_times for s in plain.streams] == [None, None]
