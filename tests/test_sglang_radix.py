"""SGLang's retraction with its radix cache on, behind the prefix-caching design's protocol: prompts
that share content hit SGLang's radix cache, declared as the plan's `cached`, and the prefix monitor
judges them; a retraction with the cache on is judged by the preemption rules (they hold on the
workload below), and what SGLang's cache does differently is broken by its design: a retracted
request's KV is not kept for its recompute, and two requests that computed the same prefix in one
step keep one copy. A bug planted into SGLang's Req (a radix match up to the prompt's last token) is
caught by HIT-SAME-TOKENS."""

from __future__ import annotations

import pytest
from sglang_guard import require_sglang

require_sglang()

from stallfree.conformance import check_workload  # noqa: E402
from stallfree.conformance.engines.sglang_faults import CAUGHT_BY, HitsLastToken  # noqa: E402
from stallfree.conformance.engines.sglang_radix import SglangRadix  # noqa: E402
from stallfree.spec import RuleViolation, Workload, play, registry  # noqa: E402


def _workload(config: tuple[int, int, int], *requests: tuple[int, int, int, list[list[int]] | None]) -> Workload:
    budget, max_seqs, kv = config
    return Workload.from_json({
        "config": {"token_budget": budget, "max_seqs": max_seqs, "kv_tokens": kv},
        "requests": [{"rid": rid, "prompt_len": p, "max_new": m, "arrival_step": a, **({"content": c} if c else {})}
                     for rid, (p, m, a, c) in enumerate(requests)]})


# rid 1's 4-token prompt is rid 0's: SGLang serves it 3 tokens from its radix cache (never the last)
HIT = _workload((4, 2, 16), (4, 2, 0, [[0, 4]]), (4, 2, 3, [[0, 4]]))
# K 32, budget 8, 3 slots, prompts sharing system prompts 0 and 1: SGLang retracts rid 0 at step 22
RADIX_RETRACTS = _workload((8, 3, 32), (5, 12, 4, [[1, 2]]), (2, 8, 0, None), (5, 9, 0, [[1, 2]]), (2, 7, 1, None),
                           (5, 13, 2, [[0, 3]]))
# two requests with the same 3-token system prompt, admitted in one step
SAME_STEP = _workload((8, 2, 16), (4, 2, 0, [[0, 3]]), (4, 2, 0, [[0, 3]]))
HOLD = ["PREEMPT-BOUND", "PREEMPT-ORDER", "EVICT-LRU", "SHARED-READONLY", "HIT-SAME-TOKENS", "CACHED-NOT-PREFILLED",
        "CACHED-NOT-CHARGED", "BUDGET", "ONE-ENTRY", "SLOTS", "BLOCKS", "RECOMPUTE", "FIRST-TOKEN", "TOKENS-KEPT",
        "FREE-AT-ZERO", "PROGRESS", "FCFS", "PARTIAL-NEXT"]


def _steps(w: Workload, rules: list[str]) -> list[tuple[int, tuple[int, ...], int]]:
    """Each step: its number, its preempted rids and the monitor's count of admissions that hit."""
    steps: list[tuple[int, tuple[int, ...], int]] = []
    play(w, SglangRadix, rules, contract=registry.contract("prefix"),
         on_step=lambda m, f: steps.append((f.step, tuple(t.rid for t in f.preempted), m.shadow.num_hits)))
    return steps


def test_a_shared_prompt_hits_sglangs_radix_cache_and_the_prefix_rules_hold() -> None:
    s = SglangRadix(4, 2, 16)
    s.add(0, 4, 2, ((0, 4),))
    s.complete(s.schedule())
    s.add(1, 4, 2, ((0, 4),))
    plan = s.schedule()
    assert list(plan) == [(1, 1)] and plan.cached == ((1, 3),)  # 3 tokens served, the last computed
    assert _steps(HIT, HOLD)[-1][2] == 1


def test_the_radix_adapter_refuses_content_past_the_prompt_and_keeps_its_state() -> None:
    s = SglangRadix(4, 2, 16)
    with pytest.raises(ValueError, match="content covers 5 tokens; prompt_len is 4"):
        s.add(0, 4, 2, ((0, 5),))
    assert s.waiting == []
    s.add(0, 4, 2, ((0, 2),))  # the rid is still free
    assert [r.rid for r in s.waiting] == [0]


def test_sglangs_retraction_with_the_cache_on_is_judged_by_the_preemption_rules() -> None:
    held = ["PREEMPT-BOUND", "PREEMPT-ORDER", "RECOMPUTE", "HIT-SAME-TOKENS", "SHARED-READONLY", "FIRST-TOKEN"]
    steps = _steps(RADIX_RETRACTS, held)
    assert [(s[0], s[1]) for s in steps if s[1]] == [(22, (0,))] and steps[-1][2] >= 1


def test_sglang_keeps_no_kv_of_a_retracted_request_for_its_recompute() -> None:
    # The contract keeps a preempted request's blocks cached; SGLang frees its decoded tokens' KV (not
    # inserted) and evicts its prompt's at once to make room for the kept requests' next decodes.
    with pytest.raises(RuleViolation) as broken:
        check_workload(RADIX_RETRACTS, SglangRadix, rules=["CACHED-NOT-PREFILLED"])
    assert (broken.value.rule, broken.value.step) == ("CACHED-NOT-PREFILLED", 23)
    assert "rid 0 holds 0 cached tokens and prefills from there; its first 15 are cached" in broken.value.message


def test_sglang_keeps_one_copy_of_a_prefix_computed_twice_in_one_step() -> None:
    # The contract keeps the second copy private; SGLang's radix insert frees it at once.
    with pytest.raises(RuleViolation) as broken:
        check_workload(SAME_STEP, SglangRadix, rules=["BLOCKS"])
    assert (broken.value.rule, broken.value.step) == ("BLOCKS", 0)


def test_a_radix_match_up_to_the_last_token_planted_in_sglangs_req_is_caught() -> None:
    rule = CAUGHT_BY[HitsLastToken]
    check_workload(HIT, SglangRadix, rules=[rule])  # SGLang's own Req computes the last token
    with pytest.raises(RuleViolation) as broken:
        check_workload(HIT, HitsLastToken, rules=[rule])
    assert (broken.value.rule, broken.value.step) == (rule, 3)
    assert "rid 1 holds 4 cached tokens of a 4-token prefill" in broken.value.message
