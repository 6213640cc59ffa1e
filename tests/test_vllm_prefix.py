"""vLLM's own V1 scheduler with automatic prefix caching on, live, behind the prefix protocol
(`vllm_prefix`): requests that share a system prompt share vLLM's cached blocks, and the prefix monitor
judges each admission's hit and vLLM's free cached blocks. vLLM keeps every prefix rule but six its
design breaks (each reason in docs/conformance.md, each counterexample replaying on vLLM); a lookup
planted into a subclass of vLLM's scheduler that skips a block never cached is caught, shrunk to one
request, where vLLM itself holds."""

from __future__ import annotations

import pytest
from vllm_guard import require_vllm
from vllm_kit_checks import holds_all_but

require_vllm()

from stallfree.conformance import check_workload  # noqa: E402
from stallfree.conformance.engines.vllm_faults import SkipUncachedBlock  # noqa: E402
from stallfree.conformance.engines.vllm_prefix import VllmPrefixScheduler  # noqa: E402
from stallfree.conformance.kit import FAIL, conform  # noqa: E402
from stallfree.conformance.kit.profiles import checked_rules  # noqa: E402
from stallfree.conformance.kit.report import render  # noqa: E402
from stallfree.spec import RuleViolation, Workload  # noqa: E402

TARGET = "stallfree.conformance.engines"
DESIGN_BREAKS = {  # the prefix rules vLLM's design breaks, with what the counterexample shows
    "PREEMPT-ORDER": "was preempted while the decodes needed",  # it preempts to fit a prefill chunk too
    "WORK-CONSERVING": "fits",  # it admits a prompt only if the whole prompt's blocks are free
    "HIT-SAME-TOKENS": "cached tokens; only its first 0",  # a block is cached when scheduled, not once computed
    "CACHED-NOT-PREFILLED": "holds 0 cached tokens",  # LRU over every freed full block, a finished request's own too
    "EVICT-LRU": "free cached blocks are",  # a finished request's own full blocks stay cached
    "FREE-AT-ZERO": "free in its cache while a running request holds it",  # a second copy is cached too
}
SMALL = {"examples": 6}


def workload(config: tuple[int, int, int], *requests: dict[str, object]) -> Workload:
    budget, max_seqs, kv = config
    return Workload.from_json({"config": {"token_budget": budget, "max_seqs": max_seqs, "kv_tokens": kv},
                               "requests": [{"rid": rid, **r} for rid, r in enumerate(requests)]})


def test_a_shared_system_prompt_is_served_from_vllms_cache_and_judged() -> None:
    # rid 1 arrives after rid 0 computed the 6-token system prompt (3 blocks of 2): vLLM's cache gives
    # rid 1 those 6 tokens, it prefills the other 3; every prefix rule but the design breaks holds.
    w = workload((8, 2, 24), {"prompt_len": 8, "max_new": 2, "arrival_step": 0, "content": [[0, 6]]},
                 {"prompt_len": 9, "max_new": 2, "arrival_step": 2, "content": [[0, 6]]})
    s = VllmPrefixScheduler(8, 2, 24)
    s.add(0, 8, 2, ((0, 6),))
    s.complete(s.schedule())
    s.complete(s.schedule())
    s.add(1, 9, 2, ((0, 6),))
    plan = s.schedule()
    assert plan.cached == ((1, 6),) and (1, 3) in plan
    judged = [r for r in checked_rules(profile="prefix") if r not in DESIGN_BREAKS and r != "NEVER-FIT"]
    check_workload(w, VllmPrefixScheduler, judged)
    with pytest.raises(RuleViolation, match="EVICT-LRU"):  # rid 0's own last block stays in vLLM's cache
        check_workload(w, VllmPrefixScheduler, ["EVICT-LRU"])


def test_conform_prefix_on_vllm_holds_every_rule_but_its_design_breaks() -> None:
    report = conform(f"{TARGET}.vllm_prefix:VllmPrefixScheduler", profile="prefix", **SMALL)
    holds_all_but(report, DESIGN_BREAKS, VllmPrefixScheduler)


def test_a_planted_skip_of_a_block_never_cached_is_caught_live() -> None:
    report = conform(f"{TARGET}.vllm_faults:SkipUncachedBlock", profile="prefix", budget=1, max_seqs=1, **SMALL)
    assert report.verdicts["HIT-SAME-TOKENS"] == FAIL, render(report)
    c = report.counterexamples["HIT-SAME-TOKENS"]
    assert c.minimal and len(c.workload.requests) == 1  # one request: nothing was ever cached
    with pytest.raises(RuleViolation) as broken:
        check_workload(c.workload, SkipUncachedBlock, rules=["HIT-SAME-TOKENS"])
    assert broken.value.rule == "HIT-SAME-TOKENS"
    check_workload(c.workload, VllmPrefixScheduler, rules=["HIT-SAME-TOKENS"])  # vLLM itself holds there
