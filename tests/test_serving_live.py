"""stallfree.serving without vLLM: the mapping of vLLM's options onto the contract (and each refusal,
naming the option), the monitor beside a live scheduler (every rule holding on the reference; a planted
over-budget bug stopped before its plan is returned; log mode going on, with honest verdicts), and
`stallfree serve`'s start-up errors."""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest

from stallfree.faults.catalog import FreeDecodes, OneAdmissionPerStep
from stallfree.main import main
from stallfree.paged import Scheduler as Paged
from stallfree.reference import Scheduler
from stallfree.serving import Deployment, Live, MonitorStop, Unmapped, check, refusals, reserved_max_new
from stallfree.spec.verdict import Verdict

PLAIN = Deployment(max_num_batched_tokens=32, max_num_seqs=4, num_blocks=9, block_size=32, max_model_len=128)


def test_the_contract_config_is_budget_slots_and_the_pools_tokens_less_the_null_block() -> None:
    config = check(PLAIN, "reservation")
    assert (config.token_budget, config.max_seqs, config.kv_tokens) == (32, 4, 8 * 32)


def test_a_reservation_is_rounded_up_to_whole_blocks() -> None:
    assert reserved_max_new(10, 12, 32) == 22  # 22 tokens: one block
    assert reserved_max_new(10, 23, 32) == 54  # 33 tokens: two blocks, 64
    assert reserved_max_new(32, 32, 32) == 32  # already whole


@pytest.mark.parametrize(("design", "change", "words"), [
    ("reservation", {"enable_prefix_caching": True}, "enable_prefix_caching=True"),
    ("paged", {"enable_prefix_caching": True}, "enable_prefix_caching=True"),
    ("paged", {"speculative": True}, "speculative decoding"),
    ("reservation", {"async_scheduling": True}, "async_scheduling=True"),
    ("paged", {"chunked_prefill": False}, "enable_chunked_prefill=False"),
    ("reservation", {"policy": "priority"}, "scheduling_policy='priority'"),
    ("paged", {"long_prefill_token_threshold": 8}, "long_prefill_token_threshold=8"),
    ("reservation", {"pipeline_parallel_size": 2}, "pipeline_parallel_size=2"),
    ("paged", {"kv_transfer": True}, "KV connector"),
    ("reservation", {"num_kv_groups": 2}, "2 KV cache groups"),
    ("reservation", {"max_model_len": 300}, "max_model_len=300 needs 320 KV tokens"),
    ("paged", {"max_model_len": 300, "num_blocks": 5}, "max_model_len=300 needs 10 blocks"),
    ("bogus", {}, "design 'bogus' is unknown"),
])
def test_each_option_that_does_not_map_is_refused_by_name(design: str, change: dict[str, object], words: str) -> None:
    deployment = dataclasses.replace(PLAIN, **change)
    with pytest.raises(Unmapped) as refused:
        check(deployment, design)
    assert words in str(refused.value)
    assert refusals(PLAIN, design if design != "bogus" else "paged") == []  # the control: unchanged, it maps


def run(live: Live, requests: list[tuple[int, int, int]], stops: dict[int, int] | None = None) -> None:
    """Drive `live` to the end: requests (rid, prompt_len, max_new) at step 0; `stops` rid -> the emitted
    count on which it stops."""
    for rid, prompt_len, max_new in requests:
        live.add(rid, prompt_len, max_new)
    counts: dict[int, int] = {}
    stops = stops or {}
    for _ in range(500):
        plan = live.plan()
        if not list(plan):
            live.complete(())
            break
        due = live.monitor.due() if live.monitor is not None else []
        stopped = [rid for rid in due if counts.get(rid, 0) + 1 == stops.get(rid)]
        for rid in live.complete(stopped):
            counts[rid] = counts.get(rid, 0) + 1


REQUESTS = [(0, 40, 6), (1, 12, 9), (2, 70, 4), (3, 5, 3)]  # budget 16: the long prompts are chunked


@pytest.mark.parametrize(("core", "design"), [(Scheduler(16, 3, 160), "reservation"),
                                              (Paged(16, 3, 160, block_size=16), "paged")])
def test_every_rule_holds_live_on_stallfrees_own_schedulers(core: object, design: str) -> None:
    live = Live(core, core.config, design)  # type: ignore[attr-defined]
    run(live, REQUESTS, stops={1: 4})
    verdicts = live.verdicts()
    assert set(verdicts.values()) == {Verdict.HOLDS}, live.report()
    assert len(live.costs.monitor_ns) == len(live.costs.scheduler_ns) == live.num_steps > 5
    assert "holds" in live.report() and "us/step" in live.report()


def test_a_plan_over_budget_is_stopped_before_it_is_returned() -> None:
    live = Live(FreeDecodes(16, 3, 160), FreeDecodes(16, 3, 160).config, "reservation")
    with pytest.raises(MonitorStop) as stopped:
        run(live, REQUESTS)
    assert stopped.value.violation.rule == "BUDGET"
    assert live.num_steps == stopped.value.violation.step  # the plan of that step was not completed
    assert not live.pending  # nor handed on
    assert live.verdicts()["BUDGET"] is Verdict.BROKEN


def test_log_mode_goes_on_unmonitored_and_judges_nothing_past_the_violation() -> None:
    core = OneAdmissionPerStep(16, 3, 160)
    live = Live(core, core.config, "reservation", on_violation="log")
    run(live, [(0, 4, 3), (1, 4, 3), *REQUESTS[2:]])  # two short prompts fit one step: it admits one
    assert [v.rule for v in live.violations] == ["WORK-CONSERVING"] and live.detached_at is not None
    verdicts = live.verdicts()
    assert verdicts.pop("WORK-CONSERVING") is Verdict.BROKEN
    assert set(verdicts.values()) == {Verdict.NOT_JUDGED}
    assert not core.waiting and not core.running and core.free_kv == 160  # every request still ran to its end


def test_unmonitored_every_rule_reads_not_checked() -> None:
    core = Scheduler(16, 3, 160)
    live = Live(core, core.config, "reservation", monitored=False)
    run(live, REQUESTS)
    assert set(live.verdicts().values()) == {Verdict.NOT_CHECKED} and core.is_idle


def test_live_refuses_an_unknown_design_or_mode() -> None:
    core = Scheduler(16, 3, 160)
    with pytest.raises(ValueError, match="design 'nope' is unknown"):
        Live(core, core.config, "nope")
    with pytest.raises(ValueError, match="on_violation must be one of stop, log, got 'ignore'"):
        Live(core, core.config, "reservation", on_violation="ignore")


def test_serve_refuses_an_unknown_design_and_missing_vllm_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["serve", "--design", "bogus", "--", "model"])
    assert usage.value.code == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err
    assert main(["serve", "--design", "paged"]) == 2
    assert "give vLLM's arguments after --" in capsys.readouterr().err


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_serve_without_vllm_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--design", "paged", "--", "model"]) == 2
    assert "vLLM is not installed in this Python" in capsys.readouterr().err
