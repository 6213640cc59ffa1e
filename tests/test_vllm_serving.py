"""vLLM's whole engine (tiny model, dummy weights, CPU) with stallfree's schedulers making every decision:
the same workload through vLLM's own scheduler and through stallfree's reservation and paged designs
gives the same greedy tokens, request for request, with ends on EOS, a stop token and a stop string,
and clients that abort; the monitor judges every step and reports every rule holding. The paged design
preempts on the way. A planted bug (a scheduler that spends past the budget) is stopped by the monitor
before its plan reaches vLLM; in log mode a planted policy bug is logged and the run goes on; options
that do not map are refused at start-up, naming the option."""

from __future__ import annotations

import pytest
from vllm_guard import require_vllm

require_vllm()

from vllm import SamplingParams  # noqa: E402

from stallfree.faults.catalog import FreeDecodes, OneAdmissionPerStep  # noqa: E402
from stallfree.serving import MonitorStop, Unmapped  # noqa: E402
from stallfree.serving.offline import Arrival, build, drive  # noqa: E402
from stallfree.serving.tiny import EOS, text  # noqa: E402
from stallfree.serving.vllm_scheduler import PagedScheduler, ReservationScheduler  # noqa: E402
from stallfree.spec.types import Config  # noqa: E402
from stallfree.spec.verdict import Verdict  # noqa: E402

# Budget 32 over 5 usable blocks of 32: prompts of up to 45 tokens are chunked beside decodes; the
# reservation design holds two or three requests at once, the paged one more, and it preempts.
ENGINE = {"num_blocks": 6, "max_model_len": 128, "budget": 32, "max_seqs": 4}


def prompt(i: int) -> str:
    return text([(i * 31 + j) % 900 + 2 for j in range(10 + i * 7)])


def greedy(max_tokens: int, **params: object) -> SamplingParams:
    return SamplingParams(max_tokens=max_tokens, temperature=0.0, **params)


# The seeded dummy model's greedy answers to these prompts are known (vLLM's own scheduler gives them:
# the test compares against its run, never against a stored answer): prompt 0 emits EOS (w11) second,
# prompt 3 emits 24 961 83 355 83 355 ..., prompt 5 emits 38 211 609 211 609 .... So request 0 ends on
# EOS, request 3 on a stop token, request 5 on a stop string (found by vLLM's detokenizer); the rest
# run to max_tokens. Requests 6 and 7 repeat 4 and 3 and are aborted: their tokens must be a prefix of
# their twins'. Prompts 4 and 5 (38 and 45 tokens) exceed the budget and are chunked beside decodes.
WORKLOAD = [
    Arrival(prompt(0), greedy(24), 0),
    Arrival(prompt(1), greedy(20, ignore_eos=True), 0),
    Arrival(prompt(2), greedy(16, ignore_eos=True), 1),
    Arrival(prompt(3), greedy(20, ignore_eos=True, stop_token_ids=[355]), 2),
    Arrival(prompt(4), greedy(20, ignore_eos=True), 3),
    Arrival(prompt(5), greedy(18, ignore_eos=True, stop=["w609 w211 w609"]), 4),
    Arrival(prompt(4), greedy(20, ignore_eos=True), 2, abort_step=7),
    Arrival(prompt(3), greedy(20, ignore_eos=True, stop_token_ids=[355]), 0, abort_step=2),
]
STOPS = {0: "EOS", 3: "a stop token", 5: "a stop string"}


@pytest.fixture(scope="module")
def runs() -> dict[str, object]:
    return {"vllm": drive(build(**ENGINE), WORKLOAD),
            "reservation": drive(build(ReservationScheduler, **ENGINE), WORKLOAD),
            "paged": drive(build(PagedScheduler, **ENGINE), WORKLOAD)}


def tokens(output: object) -> list[int]:
    return [] if output is None else list(output.outputs[0].token_ids)  # type: ignore[attr-defined]


def reason(output: object) -> str | None:
    return None if output is None else output.outputs[0].finish_reason  # type: ignore[attr-defined]


@pytest.mark.parametrize("design", ["reservation", "paged"])
def test_stallfree_gives_vllms_greedy_tokens_request_for_request(runs: dict[str, object], design: str) -> None:
    ours, theirs = runs[design].outputs, runs["vllm"].outputs  # type: ignore[attr-defined]
    for i in range(6):
        assert tokens(ours[i]) == tokens(theirs[i]), f"request {i}"
        assert reason(ours[i]) == reason(theirs[i]), f"request {i}"
        assert ours[i].outputs[0].text == theirs[i].outputs[0].text  # type: ignore[union-attr]
    for i, why in STOPS.items():  # each kind of end happened, early
        assert reason(theirs[i]) == "stop" and len(tokens(theirs[i])) < WORKLOAD[i].params.max_tokens, why
    assert tokens(theirs[0])[-1] == EOS
    assert {reason(theirs[i]) for i in range(6) if i not in STOPS} == {"length"}
    for aborted, twin in ((6, 4), (7, 3)):  # an aborted request's tokens are a prefix of its twin's
        got = tokens(ours[aborted])
        assert got == tokens(ours[twin])[:len(got)] and len(got) < len(tokens(ours[twin]))


def by_index(ends: dict[str, str]) -> dict[str, str]:
    """The scheduler's ends keyed by the index the request was added under (vLLM adds a suffix)."""
    return {request_id.rsplit("-", 1)[0]: how for request_id, how in ends.items()}


@pytest.mark.parametrize("design", ["reservation", "paged"])
def test_eos_stop_tokens_and_stop_strings_are_stops_and_aborts_are_cancels(runs: dict[str, object],
                                                                          design: str) -> None:
    """Each end as the monitor heard it: EOS, a stop token and a stop string end on their token (STOP:
    the stop string found inside the scheduler by vLLM's own detokenizer, on the same token as vLLM's
    engine finds it), a client's abort is a cancel. The reservation design hears max_tokens as a stop
    too (its reservation is rounded up to whole blocks); the paged design as the end of max_new."""
    ends = by_index(runs[design].scheduler.ends)  # type: ignore[attr-defined]
    assert {i: ends[str(i)] for i in STOPS} == dict.fromkeys(STOPS, "stop")
    assert ends["6"] == ends["7"] == "cancel"
    assert {ends[str(i)] for i in (1, 2, 4)} == {"stop" if design == "reservation" else "length"}
    live = runs[design].scheduler.live  # type: ignore[attr-defined]
    assert live.num_stops == 3 + (3 if design == "reservation" else 0) and live.num_cancels == 2


@pytest.mark.parametrize("design", ["reservation", "paged"])
def test_the_monitor_judged_every_step_and_every_rule_holds(runs: dict[str, object], design: str) -> None:
    live = runs[design].scheduler.live  # type: ignore[attr-defined]
    assert live.monitored and live.num_steps == len(runs[design].step_seconds)  # type: ignore[attr-defined]
    verdicts = live.verdicts()
    assert verdicts and set(verdicts.values()) == {Verdict.HOLDS}, live.report()
    assert live.monitor.num_adds == 8 and len(live.costs.monitor_ns) == live.num_steps


def test_the_paged_design_preempted_and_the_reservation_design_admitted_fewer(runs: dict[str, object]) -> None:
    paged = runs["paged"].scheduler.live.scheduler  # type: ignore[attr-defined]
    assert paged.num_preemptions > 0  # the preemption path ran, judged, with the same tokens out
    steps = {d: len(runs[d].step_seconds) for d in ("reservation", "paged")}  # type: ignore[attr-defined]
    assert steps["reservation"] > steps["paged"]  # whole reservations admit fewer at once


class OverBudget(ReservationScheduler):
    """A planted bug: decodes are not counted against the budget (faults.catalog.FreeDecodes)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.computed_by_completed_steps = 0
        self.added: list[object] = []

    def add_request(self, request: object) -> None:
        super().add_request(request)
        self.added.append(request)

    def make_core(self, config: object, block_size: int) -> object:
        return FreeDecodes(config.token_budget, config.max_seqs, config.kv_tokens)  # type: ignore[attr-defined]

    def update_from_output(self, scheduler_output: object, model_runner_output: object) -> object:
        self.computed_by_completed_steps += scheduler_output.total_num_scheduled_tokens  # type: ignore[attr-defined]
        return super().update_from_output(scheduler_output, model_runner_output)


def test_a_plan_over_budget_is_stopped_before_it_runs() -> None:
    engine = build(OverBudget, **ENGINE)
    with pytest.raises(MonitorStop) as stopped:
        drive(engine, WORKLOAD)
    violation = stopped.value.violation
    assert violation.rule == "BUDGET" and f"rule BUDGET broken at step {violation.step}" in str(stopped.value)
    scheduler = engine.engine_core.engine_core.scheduler
    assert scheduler.live.num_steps == violation.step  # the steps before it completed; it did not
    computed = sum(r.num_computed_tokens for r in scheduler.added)  # finished ones too
    assert computed == scheduler.computed_by_completed_steps  # nothing of the broken plan reached vLLM


class LazyAdmission(ReservationScheduler):
    """A planted policy bug: one admission a step at most (faults.catalog.OneAdmissionPerStep)."""

    def make_core(self, config: object, block_size: int) -> object:
        return OneAdmissionPerStep(config.token_budget, config.max_seqs, config.kv_tokens)  # type: ignore[attr-defined]


def test_in_log_mode_a_violation_is_logged_and_the_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    engine = build(LazyAdmission, **ENGINE, additional_config={"stallfree": {"on_violation": "log"}})
    run = drive(engine, WORKLOAD)
    live = run.scheduler.live
    assert [v.rule for v in live.violations] == ["WORK-CONSERVING"]
    verdicts = live.verdicts()
    assert verdicts["WORK-CONSERVING"] is Verdict.BROKEN
    assert {v for r, v in verdicts.items() if r != "WORK-CONSERVING"} == {Verdict.NOT_JUDGED}
    assert all(o is not None for i, o in run.outputs.items() if i < 6)  # every request still answered
    assert "WORK-CONSERVING broken at step" in caplog.text


def scheduler_for(scheduler_cls: type, prefix_caching: bool = False, **changes: object) -> object:
    """`scheduler_cls` built as vLLM's engine core builds its scheduler (the same arguments), on configs
    made without an engine: refusals at start-up are raised here."""
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.structured_output import StructuredOutputManager

    from stallfree.conformance.engines.vllm_setup import LAYER, NUM_HEADS, vllm_config

    config = vllm_config(ENGINE["budget"], ENGINE["max_seqs"], ENGINE["max_model_len"], 32, prefix_caching)
    for name, value in changes.items():
        *path, field = name.split(".")
        target = config
        for part in path:
            target = getattr(target, part)
        setattr(target, field, value)
    spec = FullAttentionSpec(block_size=32, num_kv_heads=NUM_HEADS, head_size=32, dtype=torch.float32)
    groups = [KVCacheGroupSpec([LAYER], spec)]
    kv = KVCacheConfig(num_blocks=ENGINE["num_blocks"], kv_cache_tensors=[], kv_cache_groups=groups)
    config.cache_config.num_gpu_blocks = ENGINE["num_blocks"]
    return scheduler_cls(config, kv, StructuredOutputManager(config), 32, log_stats=False)


@pytest.mark.parametrize(("design", "prefix_caching", "changes", "words"), [
    (ReservationScheduler, True, {}, "enable_prefix_caching=True"),
    (PagedScheduler, True, {}, "enable_prefix_caching=True"),
    (ReservationScheduler, False, {"scheduler_config.policy": "priority"}, "scheduling_policy='priority'"),
    (PagedScheduler, False, {"scheduler_config.long_prefill_token_threshold": 8}, "long_prefill_token_threshold=8"),
    (ReservationScheduler, False, {"model_config.max_model_len": 300}, "max_model_len=300"),
    (PagedScheduler, False, {"speculative_config": object()}, "speculative decoding"),
    (ReservationScheduler, False, {"scheduler_config.async_scheduling": True}, "async_scheduling=True"),
    (ReservationScheduler, False, {"additional_config": {"stallfree": {"on_violations": "log"}}},
     "unknown option(s) ['on_violations']"),
])
def test_an_option_that_does_not_map_is_refused_at_start_up(design: type, prefix_caching: bool,
                                                            changes: dict[str, object], words: str) -> None:
    with pytest.raises(Unmapped) as refused:
        scheduler_for(design, prefix_caching, **changes)
    assert words in str(refused.value)


def test_the_same_config_with_nothing_unmapped_starts() -> None:
    """The control of the refusals above: the configs they change start."""
    for design in (ReservationScheduler, PagedScheduler):
        assert scheduler_for(design).live.monitored


class WiderPool(PagedScheduler):
    """A planted mapping bug: K read as twice the tokens of vLLM's pool (the design and its monitor agree
    with each other, so only the adapter's check of vLLM's pool can see it)."""

    def contract(self, deployment: object) -> object:
        config = super().contract(deployment)  # type: ignore[arg-type]
        return Config(config.token_budget, config.max_seqs, 2 * config.kv_tokens)


@pytest.mark.parametrize(("scheduler_cls", "ends"), [(PagedScheduler, "steps"), (WiderPool, "BLOCKS")])
def test_the_adapter_checks_vllms_pool_against_the_designs_every_step(scheduler_cls: type, ends: str) -> None:
    """Driven without an engine (vLLM's requests, a faked forward pass): the right mapping runs to the
    end; a design that counts a wider pool than vLLM's is stopped by the pool check, naming BLOCKS."""
    from stallfree.conformance.engines.vllm_setup import faked_forward, make_request, prompt_ids
    from stallfree.serving.vllm_scheduler import Disagreement

    scheduler = scheduler_for(scheduler_cls)
    for rid in range(3):
        scheduler.add_request(make_request(str(rid), prompt_ids(rid, 40), 20, 32))  # type: ignore[attr-defined]
    try:
        for _ in range(200):
            output = scheduler.schedule()  # type: ignore[attr-defined]
            scheduler.update_from_output(output, faked_forward(scheduler, output))  # type: ignore[attr-defined]
            if not scheduler.has_unfinished_requests():  # type: ignore[attr-defined]
                break
        outcome = "steps"
    except Disagreement as error:
        outcome = "BLOCKS" if "(BLOCKS)" in str(error) else str(error)
    assert outcome == ends


class CancelledStopStrings(ReservationScheduler):
    """The control of the stop-string test: the scheduler's own search for stop strings switched off, so
    vLLM's engine finds the string after the step and aborts the request."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._stop_strings.found = lambda request_id, new_token_ids: False  # type: ignore[method-assign]


def test_without_the_schedulers_search_a_stop_string_arrives_as_a_cancel() -> None:
    run = drive(build(CancelledStopStrings, **ENGINE), [WORKLOAD[5]])
    assert reason(run.outputs[0]) == "stop"  # vLLM's engine still ends it on the string
    assert by_index(run.scheduler.ends) == {"0": "cancel"}  # but stallfree heard a cancel


def test_a_structured_output_request_is_refused_by_name_and_leaves_the_scheduler_unchanged() -> None:
    from vllm.sampling_params import StructuredOutputsParams
    from vllm.v1.request import Request

    from stallfree.conformance.engines.vllm_setup import make_request, prompt_ids

    scheduler = scheduler_for(ReservationScheduler)
    params = SamplingParams(max_tokens=8, structured_outputs=StructuredOutputsParams(json={"type": "object"}))
    with pytest.raises(Unmapped, match="request g: structured output"):
        scheduler.add_request(Request("g", prompt_ids(0, 8), params, None))  # type: ignore[attr-defined]
    assert not scheduler.requests and scheduler.live.monitor.num_adds == 0  # type: ignore[attr-defined]
    scheduler.add_request(make_request("p", prompt_ids(0, 8), 8, 32))  # type: ignore[attr-defined]
    assert list(scheduler.requests) == ["p"]  # type: ignore[attr-defined]  # the control: a plain one is taken


@pytest.mark.parametrize(("design", "option", "words"), [
    ("reservation", ["--enable-prefix-caching"], "enable_prefix_caching=True"),
    ("paged", ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 2}'], "speculative decoding"),
    ("paged", ["--async-scheduling"], "async_scheduling=True"),
])
def test_stallfree_serve_refuses_an_option_that_does_not_map_before_anything_starts(
        design: str, option: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Judged on vLLM's own parse of the arguments; the exit comes before the server is exec'd (a
    started server would not return here)."""
    from stallfree.main import main

    assert main(["serve", "--design", design, "--", "some-model", *option]) == 2
    err = capsys.readouterr().err
    assert words in err and f"stallfree's {design} scheduler cannot run this vLLM config" in err
