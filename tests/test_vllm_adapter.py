"""vLLM's own V1 scheduler, live, behind the plain protocol: with memory that never binds it holds
every rule judged; with a K-token pool the kit judges every rule (held, broken with a shrunk
counterexample, or not applicable with the reason), skips the configs vLLM refuses, and the
counterexamples found on vLLM replay against it in-process and show the behaviour."""

from __future__ import annotations

import random

import pytest
from engine_workloads import workload
from vllm_guard import require_vllm

require_vllm()

from stallfree.conformance import check_workload  # noqa: E402
from stallfree.conformance.engines.vllm_adapter import Preempted, VllmKvScheduler, VllmScheduler  # noqa: E402
from stallfree.conformance.kit import FAIL, NOT_APPLICABLE, NOT_JUDGED, NOT_SUPPORTED, PASS, conform  # noqa: E402
from stallfree.conformance.kit.report import render  # noqa: E402
from stallfree.spec import RULE_IDS, RuleViolation, Workload, play  # noqa: E402
from stallfree.testing.generate import Ranges, random_workload  # noqa: E402

SMALL = Ranges(max_budget=16, max_seqs=4, max_prompt=40, max_new=5, max_requests=6)

ADAPTER = "stallfree.conformance.engines.vllm_adapter"


def test_vllm_chunks_a_long_prompt_beside_a_decode_as_the_contract_does() -> None:
    # A 20-token prompt arrives while rid 0 decodes, budget 8: vLLM decodes rid 0 every step and chunks
    # the prompt into the rest of the budget.
    w = workload((8, 4, 64), (4, 6, 0), (20, 3, 2))
    steps: list[list[tuple[int, int]]] = []
    judged = [r for r in RULE_IDS if r not in VllmScheduler.stallfree_not_applicable]
    stats = play(w, VllmScheduler, judged, on_step=lambda m, f: steps.append(f.plan))
    assert stats.finished == 2
    assert steps[:5] == [[(0, 4)], [(0, 1)], [(0, 1), (1, 7)], [(0, 1), (1, 7)], [(0, 1), (1, 6)]]


def test_vllm_holds_every_judged_rule_on_generated_workloads() -> None:
    # The kit's whole grid runs in benchmarks/conform_vllm.py (about a minute); here, in-process, a
    # sample of generated workloads at configs vLLM accepts, every rule but the two not applicable.
    judged = [r for r in RULE_IDS if r not in VllmScheduler.stallfree_not_applicable]
    played = 0
    for seed in range(60):
        w = random_workload(random.Random(seed), SMALL)
        if w.config.token_budget < w.config.max_seqs:
            continue  # vLLM refuses the config (the kit skips it: below)
        check_workload(w, VllmScheduler, judged)
        played += 1
    assert played >= 20


def test_conform_on_vllm_judges_every_rule_skips_refused_configs_and_shrinks_what_breaks() -> None:
    report = conform(f"{ADAPTER}:VllmKvScheduler", budget=4, examples=4)
    assert NOT_JUDGED not in report.verdicts.values(), render(report)
    assert report.verdicts["NEVER-FIT"] == NOT_APPLICABLE and "front end" in report.not_applicable["NEVER-FIT"]
    # vLLM refuses max_num_batched_tokens below max_num_seqs: budget 4 with 16 slots, at each KV room.
    assert set(report.refused) == {f"budget 4, max_seqs 16, kv {room}" for room in ("barely", "tight", "roomy")}
    assert all("must be greater than or equal to max_num_seqs (16)" in why for why in report.refused.values())
    assert report.verdicts["KV"] == FAIL
    c = report.counterexamples["KV"]
    assert c.minimal and "reserves" in c.message
    with pytest.raises(RuleViolation) as broken:  # the pasted test's call, against vLLM in-process
        check_workload(c.workload, VllmKvScheduler, rules=["KV"])
    assert broken.value.rule == "KV"
    # The adapter exposes no cancel(): CANCEL reads not supported (skipped and listed), never passed.
    assert report.verdicts["CANCEL"] == NOT_SUPPORTED and any("cancel" in s for s in report.skipped)
    judged = {v for r, v in report.verdicts.items() if r not in report.counterexamples and r != "CANCEL"}
    assert judged <= {PASS, NOT_APPLICABLE}


@pytest.mark.parametrize(("rule", "step", "w"), [
    # KV: vLLM admits rid 1 on the one block its prompt needs, not its whole reservation: 13 + 5 > 17.
    ("KV", 3, workload((2, 2, 17), (7, 6, 0), (2, 3, 0))),
    # WORK-CONSERVING: the pool is one 16-token block; rid 1 (2 tokens, which fit K=4 beside rid 0's 2)
    # needs a block of its own, so vLLM leaves a budget token unused: memory is counted in blocks.
    ("WORK-CONSERVING", 0, workload((2, 2, 4), (1, 1, 0), (1, 1, 0))),
])
def test_counterexamples_found_on_vllm_replay_against_it(rule: str, step: int, w: Workload) -> None:
    with pytest.raises(RuleViolation) as broken:
        check_workload(w, VllmKvScheduler, rules=[rule])
    assert (broken.value.rule, broken.value.step) == (rule, step)
    if rule == "WORK-CONSERVING":  # with memory that never binds, vLLM keeps the rule
        check_workload(w, VllmScheduler, rules=[rule])


def test_vllm_preempts_where_the_k_token_pool_runs_out() -> None:
    # rid 0's 16-token prompt fills one block; its first decode needs a second, held by rid 1: vLLM
    # preempts rid 1 (recompute). The plain protocol has no word for it: the adapter raises.
    w = workload((3, 2, 18), (16, 2, 0), (1, 2, 0))
    with pytest.raises(Preempted, match=r"vLLM preempted \['1'\]"):
        check_workload(w, VllmKvScheduler, rules=[])


def test_every_vllm_symbol_the_adapter_and_recorder_use_is_on_the_installed_vllm() -> None:
    from stallfree.conformance.engines.vllm_api import SYMBOLS, check_vllm_api, checked_once

    assert checked_once.cache_info().currsize == 1  # the adapter's import ran the check
    check_vllm_api()  # raises VllmApiMoved naming the symbol if one had moved
    assert len(SYMBOLS) >= 40
