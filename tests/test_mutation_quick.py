"""The fast selection mutation testing runs against each mutant (see docs/mutation.md): the
reference under the monitor over varied random workloads, and the monitor over the wrong
schedulers. Also part of the ordinary test command (about two seconds)."""

from __future__ import annotations

import random

import pytest

from stallfree.faults import FAULTS
from stallfree.reference import Scheduler
from stallfree.spec import RULE_IDS, RuleViolation, play
from stallfree.testing.generate import LIFECYCLE, random_workload
from stallfree.variants import Stepwise

SEED = 3
NUM_WORKLOADS = 40  # enough to reach every branch of the policy: checked by the coverage of mutants
NUM_LIFECYCLE = 20  # with stops and cancels, for the branches that end requests early
WORKLOADS = [random_workload(random.Random(f"{SEED}:{i}")) for i in range(NUM_WORKLOADS)] + [
    random_workload(random.Random(f"{SEED}:{i}"), LIFECYCLE) for i in range(NUM_LIFECYCLE)]


@pytest.mark.parametrize("factory", [Scheduler, Stepwise], ids=["reference", "stepwise"])
def test_every_rule_holds_on_random_workloads(factory: type) -> None:
    for workload in WORKLOADS:
        stats = play(workload, factory)
        assert stats.finished == stats.accepted  # PROGRESS: each accepted request finished, stopped or was cancelled


@pytest.mark.parametrize("rule", RULE_IDS)
def test_monitor_names_the_rule_each_fault_breaks(rule: str) -> None:
    for workload in WORKLOADS:
        try:
            play(workload, FAULTS[rule], [rule])
        except RuleViolation as violation:
            assert violation.rule == rule
            return
    pytest.fail(f"no workload exposed {FAULTS[rule].__name__} ({rule})")
