"""vLLM's own V1 scheduler, live, behind the paged protocol (`vllm_paged`): the paged monitor judges its
real recompute preemption, its EOS stops and its aborts. vLLM keeps every paged rule but the two its
design breaks (each with a counterexample that replays on vLLM, and a reason in docs/conformance.md);
bugs planted into subclasses of vLLM's scheduler (`vllm_faults`) are each caught, named, shrunk to a
1-minimal workload that breaks the rule on the faulty vLLM and not on vLLM itself."""

from __future__ import annotations

import pytest
from vllm_guard import require_vllm
from vllm_kit_checks import holds_all_but

require_vllm()

from stallfree.conformance import check_workload  # noqa: E402
from stallfree.conformance.engines import vllm_faults  # noqa: E402
from stallfree.conformance.engines.vllm_paged import VllmPagedScheduler  # noqa: E402
from stallfree.conformance.kit import FAIL, PASS, conform  # noqa: E402
from stallfree.conformance.kit.profiles import checked_rules  # noqa: E402
from stallfree.conformance.kit.report import render  # noqa: E402
from stallfree.spec import (  # noqa: E402
    RuleViolation,
    Workload,
    play,
    registry,
)

ENGINES = "stallfree.conformance.engines"
DESIGN_BREAKS = {  # the paged rules vLLM's design breaks, with what the counterexample shows
    "PREEMPT-ORDER": "was preempted while the decodes needed",  # it preempts to fit a prefill chunk too
    "WORK-CONSERVING": "fits",  # it admits a prompt only if the whole prompt's blocks are free
}
SMALL = {"budget": 2, "max_seqs": 2, "examples": 8}  # 3 configs (KV barely, tight, roomy), where preemption is cheap


def workload(config: tuple[int, int, int], *requests: dict[str, int]) -> Workload:
    budget, max_seqs, kv = config
    return Workload.from_json({"config": {"token_budget": budget, "max_seqs": max_seqs, "kv_tokens": kv},
                               "requests": [{"rid": rid, **r} for rid, r in enumerate(requests)]})


def test_vllm_preempts_recomputes_and_resumes_under_the_paged_monitor() -> None:
    # rid 0 (16 tokens) and rid 1 outgrow a pool of 9 blocks of 2: vLLM preempts rid 1, the newest,
    # frees its blocks and later recomputes it; every paged rule but the two design breaks holds.
    w = workload((3, 2, 18), {"prompt_len": 16, "max_new": 2, "arrival_step": 0},
                 {"prompt_len": 1, "max_new": 2, "arrival_step": 0})
    preempted: list[tuple[int, ...]] = []
    judged = [r for r in checked_rules(profile="paged") if r not in DESIGN_BREAKS and r != "NEVER-FIT"]
    stats = play(w, VllmPagedScheduler, judged, contract=registry.contract("paged"),
                 on_step=lambda m, f: preempted.append(tuple(t.rid for t in f.preempted)))
    assert stats.finished == 2 and (1,) in preempted


def test_conform_paged_on_vllm_holds_every_rule_but_its_design_breaks() -> None:
    report = conform(f"{ENGINES}.vllm_paged:VllmPagedScheduler", profile="paged", **SMALL)
    holds_all_but(report, DESIGN_BREAKS, VllmPagedScheduler)
    # stops (EOS sampled by the faked forward pass) and aborts were driven and judged, not skipped
    assert report.verdicts["CANCEL"] == PASS and report.verdicts["TOKENS-KEPT"] == PASS and not report.skipped


@pytest.mark.parametrize("fault", list(vllm_faults.CAUGHT_BY), ids=lambda f: f.__name__)
def test_a_bug_planted_in_vllms_scheduler_is_caught_shrunk_and_replays_on_vllm(fault: type) -> None:
    rule = vllm_faults.CAUGHT_BY[fault]
    report = conform(f"{ENGINES}.vllm_faults:{fault.__name__}", profile="paged", **SMALL)
    assert report.verdicts[rule] == FAIL, render(report)
    c = report.counterexamples[rule]
    assert c.minimal
    with pytest.raises(RuleViolation) as broken:
        check_workload(c.workload, fault, rules=[rule])
    assert broken.value.rule == rule
    check_workload(c.workload, VllmPagedScheduler, rules=[rule])  # vLLM itself keeps the rule there
