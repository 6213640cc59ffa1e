"""Negative controls of the paged design: each wrong paged scheduler in faults/paged.py is caught,
with its rule named, by the paged monitor and by the paged model check; the correct scheduler on
the same pool passes both. Every rule new to the paged design has its fault, and `prove --fault`
selects each fault by its rule or by its name."""

from __future__ import annotations

import collections

import pytest
from test_paged_scheduler import drive

from stallfree.faults.paged import END_FAULTS, PAGED_FAULTS, LeakOnEnd, OverRun, RequeueAtBack, small
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.paged import check
from stallfree.proofs.paged_suite import control_bound
from stallfree.proofs.paged_suite import fault as select
from stallfree.spec import RULES, RuleViolation
from stallfree.spec.paged.rules import NEW_IDS, PAGED_RULE_IDS, PAGED_RULES, SHARED_IDS

CI_BOUND = "2,2,6,3,3,3"  # preempts; ~2,400 states
FAULT_BOUND = {RequeueAtBack: "2,3,6,3,2,3"}  # a preempted request and a later arrival both waiting


def test_the_registry_shares_the_rules_that_apply_and_adds_the_paged_ones() -> None:
    assert set(SHARED_IDS) >= {"BUDGET", "ONE-ENTRY", "SLOTS", "FIRST-TOKEN", "PROGRESS", "FCFS", "DECODE-FIRST"}
    shared = {r.id: r for r in RULES}
    for rule in PAGED_RULES:
        if rule.id in ("BUDGET", "ONE-ENTRY", "SLOTS", "FIRST-TOKEN", "PROGRESS", "FCFS", "DECODE-FIRST"):
            assert rule is shared[rule.id]  # the same predicate and statement, not a copy
    assert not {"KV", "PREFILL-ONCE", "TOKENS"} & set(PAGED_RULE_IDS)  # the reservation design's
    assert set(NEW_IDS) == {"BLOCKS", "WATERMARK", "RECOMPUTE", "TOKENS-KEPT", "CANCEL", "PREEMPT-ORDER",
                            "PREEMPT-BOUND"}


def test_every_new_rule_and_NEVER_FIT_has_a_fault() -> None:
    assert {f.breaks for f in PAGED_FAULTS} == set(NEW_IDS) | {"NEVER-FIT"}
    assert len(PAGED_FAULTS) == 11 and set(END_FAULTS) < set(PAGED_FAULTS)  # 8 by rule, 3 through stops and cancels


def test_prove_selects_a_fault_by_its_rule_or_by_its_name() -> None:
    assert select("BLOCKS") is LeakOnEnd and select("TOKENS-KEPT") is OverRun  # a rule: the first listed
    for fault in PAGED_FAULTS:
        assert select(fault.__name__.upper()) is fault
    assert control_bound("RequeueAtBack".upper()) == control_bound("PREEMPT-ORDER") != control_bound("BLOCKS")
    with pytest.raises(ValueError, match=r"no paged fault breaks KV or is named so.*by name: LeakOnEnd"):
        select("KV")


@pytest.mark.parametrize("fault", PAGED_FAULTS, ids=lambda f: f.breaks)
def test_the_paged_monitor_names_each_faults_rule(fault: type) -> None:
    seen: collections.Counter[str] = collections.Counter()
    for seed in range(80):
        try:
            drive(fault, seed, stops=fault.breaks != "RECOMPUTE")
        except RuleViolation as violation:
            seen[violation.rule] += 1
    assert seen.most_common(1)[0][0] == fault.breaks, dict(seen)
    assert set(seen) <= {fault.breaks, *fault.also}, dict(seen)  # EarlyToken's `also`, at times; the others none


def test_the_correct_scheduler_on_the_faults_pool_passes_the_same_runs() -> None:
    for seed in range(80):
        drive(small, seed)


def test_the_paged_model_check_holds_on_the_paged_scheduler() -> None:
    result = check(Bounds.parse(CI_BOUND), small)
    assert result.counterexample is None, result.counterexample.describe()
    assert result.holds and result.states > 1000
    assert result.preempting_states > 0 and result.max_preemptions >= 1  # preemption was explored
    assert result.drain_bound is not None and result.drain_bound > 0


@pytest.mark.parametrize("fault", PAGED_FAULTS, ids=lambda f: f.breaks)
def test_the_paged_model_check_names_each_faults_rule(fault: type) -> None:
    result = check(Bounds.parse(FAULT_BOUND.get(fault, "2,2,6,2,3,3")), fault)
    ce = result.counterexample
    assert ce is not None, f"the paged model check missed {fault.__name__}"
    assert ce.rule == fault.breaks, ce.describe()
    assert ce.workload.requests
