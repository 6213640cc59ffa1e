"""The kit against the negative controls: each FAULTS[rule] is caught under that rule's ID, with a
counterexample that replays in-process and is 1-minimal; the reference passes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stallfree.conformance import check_workload
from stallfree.conformance.kit import FAIL, NOT_CHECKED, PASS, Counterexample, conform
from stallfree.conformance.kit.shrink import CONFIG_FIELDS, FIELD_MINIMUM, REQUEST_FIELDS, verdicts
from stallfree.faults import FAULTS, MORE_FAULTS
from stallfree.spec import RULE_IDS, RuleViolation, Workload

EXAMPLES = 4  # per grid point (60 points): enough to meet every fault, and fast


def breaks(workload: Workload, factory: object, rule: str) -> bool:
    try:
        check_workload(workload, factory, [rule])  # type: ignore[arg-type]
    except RuleViolation as violation:
        return violation.rule == rule
    return False


def neighbours(w: Workload) -> list[Workload]:
    """Every workload one move smaller: one request dropped, or one number lowered by one; each request
    still accepted or refused as in `w` (a move that turns an accepted request into a refused one, or
    the reverse, leaves the counterexample's domain)."""
    domain = verdicts(w)
    dropped = [(replace(w, requests=w.requests[:i] + w.requests[i + 1:]), domain[:i] + domain[i + 1:])
               for i in range(len(w.requests))]
    return [c for c, kept in dropped if verdicts(c) == kept] + [c for c in _lowered(w) if verdicts(c) == domain]


def _lowered(w: Workload) -> list[Workload]:
    out = []
    for i, a in enumerate(w.requests):
        for name in REQUEST_FIELDS:
            value = getattr(a, name)
            if type(value) is int and value > FIELD_MINIMUM[name]:
                out.append(replace(w, requests=(*w.requests[:i], replace(a, **{name: value - 1}), *w.requests[i + 1:])))
    for name in CONFIG_FIELDS:
        value = getattr(w.config, name)
        if value > FIELD_MINIMUM[name]:
            out.append(replace(w, config=replace(w.config, **{name: value - 1})))
    return out


@pytest.mark.parametrize("rule", RULE_IDS)
def test_fault_is_caught_with_its_rule_and_a_minimal_counterexample(rule: str) -> None:
    fault = FAULTS[rule]
    report = conform(f"stallfree.faults.catalog:{fault.__name__}", rules=[rule], examples=EXAMPLES)
    assert report.verdicts[rule] == FAIL, report.verdicts
    c: Counterexample = report.counterexamples[rule]
    assert c.rule == rule and c.minimal
    assert breaks(c.workload, fault, rule)  # it replays in-process, as the pasted test does
    assert Workload.loads(c.workload.dumps()) == c.workload
    for smaller in neighbours(c.workload):  # 1-minimal, checked independently of the shrinker
        assert not breaks(smaller, fault, rule), smaller.dumps()


def test_full_profile_names_the_broken_rule_and_only_it() -> None:
    # SkipAhead breaks FCFS and nothing else: with every rule checked, FCFS alone fails.
    report = conform("stallfree.faults.catalog:SkipAhead", examples=EXAMPLES)
    assert {r for r, v in report.verdicts.items() if v == FAIL} == {"FCFS"}
    assert set(report.counterexamples) == {"FCFS"}


def test_reference_passes_the_kit() -> None:
    report = conform("stallfree.reference:Scheduler", examples=EXAMPLES)
    assert report.ok and set(report.verdicts.values()) == {PASS}
    assert report.runs == EXAMPLES * len(report.shapes) and report.steps > 0


def test_profile_safety_lists_other_rules_as_not_checked() -> None:
    # SkipAhead breaks FCFS only: under the safety profile it passes, and FCFS is not reported as passing.
    report = conform("stallfree.faults.catalog:SkipAhead", profile="safety", examples=2)
    assert report.ok
    assert report.verdicts["FCFS"] == NOT_CHECKED and report.verdicts["KV"] == NOT_CHECKED
    assert report.verdicts["BUDGET"] == PASS


def test_rules_pick_exactly_the_rules_checked() -> None:
    report = conform("stallfree.faults.catalog:SkipAhead", rules=["FCFS", "BUDGET"], examples=2)
    assert report.verdicts["FCFS"] == FAIL and report.verdicts["BUDGET"] == PASS
    assert [r for r, v in report.verdicts.items() if v == NOT_CHECKED] == [
        r for r in RULE_IDS if r not in ("FCFS", "BUDGET")
    ]


@pytest.mark.parametrize("fault", MORE_FAULTS, ids=lambda f: f.__name__)
def test_further_faults_are_caught_with_a_minimal_counterexample(fault: type) -> None:
    report = conform(f"stallfree.faults.catalog:{fault.__name__}", rules=[fault.breaks], examples=EXAMPLES)
    assert report.verdicts[fault.breaks] == FAIL, report.verdicts
    c = report.counterexamples[fault.breaks]
    assert c.minimal and breaks(c.workload, fault, fault.breaks)
    for smaller in neighbours(c.workload):
        assert not breaks(smaller, fault, fault.breaks), smaller.dumps()
