"""Static batching (stallfree.variants.static), the teaching baseline: it keeps its own contract
(stallfree.spec.variants.static) on random workloads, breaks WORK-CONSERVING and only it under the reference's,
and each rule of its own catches its fault."""

from __future__ import annotations

import random

import pytest
from violations import first_violation

from stallfree.faults.static import STATIC_FAULTS
from stallfree.main import main
from stallfree.spec import RULE_IDS, Arrival, Config, RuleViolation, Workload, play
from stallfree.spec.variants.static import STATIC_CONTRACT
from stallfree.testing.generate import Ranges, random_workload
from stallfree.variants import StaticBatching

RANGES = Ranges(max_budget=16, max_seqs=4, max_prompt=24, max_new=6, max_requests=8, max_gap=3)
WORKLOADS = [random_workload(random.Random(seed), RANGES) for seed in range(200)]
# r0 runs alone; r1 and r2 arrive while it decodes and fit beside it.
LATE = Workload(Config(16, 4, 256), (Arrival(0, 6, 4, 0), Arrival(1, 4, 3, 1), Arrival(2, 3, 2, 2)))


def broken_under_the_reference(workload: Workload) -> set[str]:
    """Every rule of RULES the static scheduler breaks on `workload`, found as --keep-going finds them."""
    checked, broken = list(RULE_IDS), set()
    while True:
        try:
            play(workload, StaticBatching, checked)
            return broken
        except RuleViolation as violation:
            broken.add(violation.rule)
            checked.remove(violation.rule)


def test_static_batching_keeps_its_own_contract() -> None:
    assert first_violation(WORKLOADS, StaticBatching, STATIC_CONTRACT) is None


def test_under_the_reference_it_breaks_work_conserving_alone() -> None:
    found = set().union(*(broken_under_the_reference(w) for w in WORKLOADS))
    assert found == {"WORK-CONSERVING"}
    assert broken_under_the_reference(LATE) == {"WORK-CONSERVING"}


@pytest.mark.parametrize("rule", sorted(STATIC_FAULTS))
def test_each_static_rule_catches_its_fault(rule: str) -> None:
    caught = first_violation([LATE, *WORKLOADS], STATIC_FAULTS[rule], STATIC_CONTRACT)
    assert caught is not None and caught.rule == rule, caught


def test_trace_names_static_and_judges_it_under_its_contract(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["trace", "--scheduler", "static", "--budget", "16", "--request", "0:6:4", "--request", "1:4:3@1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "contract static" in out and "BATCH-CLOSED     holds" in out
    assert main([*argv, "--contract", "reference"]) == 1
    out = capsys.readouterr().out
    assert "WORK-CONSERVING  BROKEN at step 1" in out


def test_the_kit_takes_the_static_profile() -> None:
    from stallfree.conformance.kit.profiles import contract_of, is_profile

    assert is_profile("static") and contract_of("static") is STATIC_CONTRACT and not STATIC_CONTRACT.is_design
