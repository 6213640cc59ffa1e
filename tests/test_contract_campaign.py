"""A random campaign of 400 workloads through the reference under the monitor: nothing found.

Budgets 1..256, slots 1..11, prompts 1..299, max_new 1..30, staggered arrivals, KV from exactly the
largest request to generous, and some never-fit requests (which add() must refuse)."""

from __future__ import annotations

import random

from stallfree.reference import Scheduler
from stallfree.spec import RunStats, play
from stallfree.testing.generate import random_workload

NUM_WORKLOADS = 400
SEED = 20231116


def test_reference_campaign_400_workloads_no_violation() -> None:
    rng = random.Random(SEED)
    total = RunStats()
    budgets, slots, refused = set(), set(), 0
    for _ in range(NUM_WORKLOADS):
        workload = random_workload(rng)
        stats = play(workload, Scheduler)  # raises RuleViolation with the rule ID on any broken rule
        assert stats.finished == stats.accepted  # PROGRESS: every accepted request finished
        total.steps += stats.steps
        total.accepted += stats.accepted
        refused += stats.refused
        budgets.add(workload.config.token_budget)
        slots.add(workload.config.max_seqs)
    # the campaign covers what it claims to cover: a generator that narrowed its ranges (or stopped
    # offering never-fit requests) would make the campaign above weaker without failing it
    assert 1 in budgets and max(budgets) > 200 and slots >= {1, 11}  # deliberate: the coverage claimed
    assert refused > 0, "no never-fit request was offered"
    assert total.steps > 100_000 and total.accepted > 4_000
