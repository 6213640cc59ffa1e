"""The comparison's policy variants: each keeps the contract's safety rules and breaks the one
policy rule it is built to break (DECODE-FIRST; and BUDGET for unchunked prefill)."""

from __future__ import annotations

import random

import pytest

from stallfree.sim.policies import factory
from stallfree.spec import Arrival, Config, Monitor, RuleViolation, StepFacts, Workload, play
from stallfree.testing.generate import random_workload

SAFETY = ("ONE-ENTRY", "SLOTS", "KV", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", "NEVER-FIT", "PROGRESS", "FCFS")
NUM_WORKLOADS = 60
# A stream decoding when a prompt longer than the budget arrives: both variants must stall it.
LONG_PROMPT = Workload(Config(token_budget=16, max_seqs=4, kv_tokens=200), (Arrival(0, 4, 20, 0), Arrival(1, 40, 2, 3)))


@pytest.mark.parametrize("policy", ["prefill-first", "unchunked"])
def test_variant_keeps_the_safety_rules(policy: str) -> None:
    rng = random.Random(7)
    rules = SAFETY if policy == "unchunked" else (*SAFETY, "BUDGET")
    for _ in range(NUM_WORKLOADS):
        play(random_workload(rng), factory(policy), rules)


@pytest.mark.parametrize(("policy", "rule"), [("prefill-first", "DECODE-FIRST"), ("unchunked", "BUDGET")])
def test_variant_breaks_its_rule(policy: str, rule: str) -> None:
    with pytest.raises(RuleViolation) as error:
        play(LONG_PROMPT, factory(policy))
    assert error.value.rule == rule


def test_reference_keeps_every_rule_on_the_long_prompt() -> None:
    play(LONG_PROMPT, factory("reference"))


def test_unchunked_runs_whole_prompts_apart_from_decodes() -> None:
    seen: list[StepFacts] = []

    def on_step(monitor: Monitor, facts: StepFacts) -> None:
        seen.append(facts)

    play(LONG_PROMPT, factory("unchunked"), SAFETY, on_step=on_step)
    for facts in seen:
        assert not facts.chunks  # never a partial prompt: each prompt runs whole on admission
        assert not (facts.decodes and facts.admitted)  # a step prefills or decodes, never both
        for c in facts.admitted:
            assert c.n == c.track.request.prompt_len
    assert any(c.n == 40 for f in seen for c in f.admitted)  # longer than the budget of 16, in one step


def test_prefill_first_gives_prompts_the_budget_before_decodes() -> None:
    seen: list[StepFacts] = []
    play(LONG_PROMPT, factory("prefill-first"), (*SAFETY, "BUDGET"), on_step=lambda m, f: seen.append(f))
    stalled = [f for f in seen if f.chunks or f.admitted]
    assert any(not f.decodes and f.num_tokens == 16 for f in stalled)  # the stream waits a whole step
