"""The monitor's one-pass shortcut (`spec/reservation/ordinary.py`) changes no verdict.

`plan_holds` and `done_holds` may answer True only where every plan (done) check of RULES returns
None. Over every step of the faulty schedulers' plays (each rule's fault, the further ones, the
lifecycle ones with stops and cancels, the budget-change variant's under its own monitor), with
every rule checked and with one rule checked, and over the state machine's runs of the faults, each
answer of the shortcut is compared with every check's own: a True where a check reports a message
fails the test. The played verdicts (rule, step, message, or the counts of a clean run) are the same
with the shortcut and without it. A shortcut that always says True is caught by both comparisons:
the negative control of this test itself.
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test
from test_variant_rotation import WORKLOADS as BUDGET_WORKLOADS  # pytest puts tests/ on the path

from stallfree.faults import FAULTS, LIFECYCLE_FAULTS, MORE_FAULTS
from stallfree.faults.budget import BUDGET_FAULTS
from stallfree.reference import Scheduler
from stallfree.spec import RULE_IDS, RuleViolation, Unsupported, Workload, play
from stallfree.spec.contract import Contract
from stallfree.spec.reservation import monitor as monitor_module
from stallfree.spec.reservation.ordinary import done_holds, plan_holds
from stallfree.spec.reservation.rules import RULES
from stallfree.spec.variants.budget_change import BUDGET_CONTRACT
from stallfree.testing.generate import LIFECYCLE, random_workload
from stallfree.testing.machine import machine_for
from stallfree.variants import Stepwise
from stallfree.variants.rotating import Resizable, Rotating

PLAIN = [random_workload(random.Random(seed)) for seed in range(20)]
WITH_ENDS = [random_workload(random.Random(seed), LIFECYCLE) for seed in range(12)]
PLAN_CHECKS = [(r.id, r.plan_check) for r in RULES if r.plan_check]
DONE_CHECKS = [(r.id, r.done_check) for r in RULES if r.done_check]
Holds = Callable[[Any, Any], bool]

# (scheduler, workloads, contract): the faults, a correct scheduler, the budget-change variant.
PLAYS: list[tuple[Any, list[Workload], Contract | None]] = [
    *[(fault, PLAIN + WITH_ENDS[:3], None) for fault in (*FAULTS.values(), *MORE_FAULTS)],
    *[(fault, WITH_ENDS, None) for fault in LIFECYCLE_FAULTS],
    (Scheduler, PLAIN[:10] + WITH_ENDS[:6], None),
    *[(fault, BUDGET_WORKLOADS[:25], BUDGET_CONTRACT) for fault in (*BUDGET_FAULTS.values(), Rotating, Resizable)],
]


def messages(checks: list[tuple[str, Any]], shadow: Any, facts: Any) -> list[str]:
    """What each check reports on this step, an exception counted as a report."""
    found = []
    for rule_id, check in checks:
        try:
            message = check(shadow, facts)
        except Exception as error:  # a check that raises has not held
            message = f"raised {type(error).__name__}"
        if message is not None:
            found.append(f"{rule_id}: {message}")
    return found


class Compared:
    """Each answer of a shortcut against every check's own, kept per answer."""

    def __init__(self) -> None:
        self.answers: Counter[tuple[str, bool]] = Counter()
        self.wrong: list[str] = []  # a True where a check reported

    def watching(self, holds: Holds, checks: list[tuple[str, Any]], name: str) -> Holds:
        def compared(shadow: Any, facts: Any) -> bool:
            said = holds(shadow, facts)
            reported = messages(checks, shadow, facts)
            self.answers[name, said] += 1
            if said and reported:
                self.wrong.append(f"{name} held at step {facts.step}, yet {reported[0]}")
            return said
        return compared


@contextmanager
def shortcuts(plan: Holds | None, done: Holds | None) -> Iterator[None]:
    """Every reservation-rule monitor made inside takes `plan` and `done` for its shortcut (None: none)."""
    saved = monitor_module.plan_holds, monitor_module.done_holds, monitor_module.shortcut
    with pytest.MonkeyPatch.context() as patch:
        if plan is None or done is None:
            patch.setattr(monitor_module, "shortcut", lambda checks, covered, holds: None)
        else:
            patch.setattr(monitor_module, "plan_holds", plan)
            patch.setattr(monitor_module, "done_holds", done)
        yield
    assert (monitor_module.plan_holds, monitor_module.done_holds, monitor_module.shortcut) == saved


def verdict(factory: Any, workload: Workload, rules: Any, contract: Contract | None) -> object:
    try:
        stats = play(workload, factory, rules, contract=contract)
    except RuleViolation as violation:
        return violation.rule, violation.step, str(violation)
    except Unsupported as refused:  # a workload with stops for a scheduler without them: refused up front
        return str(refused)
    return stats


def verdicts(plays: list[tuple[Any, list[Workload], Contract | None]], selections: bool) -> list[object]:
    found: list[object] = []
    for factory, workloads, contract in plays:
        for workload in workloads:
            found.append(verdict(factory, workload, None, contract))
            if selections:  # the fault's own rule alone (where it has one), and two rules together
                own = getattr(factory, "breaks", None) or next((r for r, f in FAULTS.items() if f is factory), None)
                for rules in ([[own]] if own in RULE_IDS else []) + [["KV", "TOKENS"]]:
                    found.append(verdict(factory, workload, rules, contract))
    return found


def compared_over(plays: list[tuple[Any, list[Workload], Contract | None]], plan: Holds, done: Holds) -> Compared:
    compared = Compared()
    with shortcuts(compared.watching(plan, PLAN_CHECKS, "plan"), compared.watching(done, DONE_CHECKS, "done")):
        verdicts(plays, selections=True)
    return compared


def test_the_shortcut_holds_only_where_every_check_holds() -> None:
    compared = compared_over(PLAYS, plan_holds, done_holds)
    assert compared.wrong == []
    # Both answers given, often: the faults' steps are declined, the ordinary ones taken.
    for name in ("plan", "done"):
        assert compared.answers[name, True] > 10_000 and compared.answers[name, False] > 100, compared.answers


def test_the_state_machine_over_the_faults_agrees() -> None:
    given = settings(max_examples=15, derandomize=True, deadline=None, print_blob=False, database=None,
                     phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    compared = Compared()
    with shortcuts(compared.watching(plan_holds, PLAN_CHECKS, "plan"),
                   compared.watching(done_holds, DONE_CHECKS, "done")):
        for factory in (*FAULTS.values(), Stepwise):
            with contextlib.suppress(RuleViolation):  # the fault caught, as tests/test_machine_faults.py asks
                run_state_machine_as_test(machine_for(factory), settings=given)
    assert compared.wrong == []
    assert compared.answers["plan", True] > 100 and compared.answers["plan", False] > 0, compared.answers


def test_the_verdicts_are_the_same_with_and_without_the_shortcut() -> None:
    with shortcuts(None, None):
        without = verdicts(PLAYS, selections=True)
    assert verdicts(PLAYS, selections=True) == without
    assert sum(type(v) is tuple for v in without) > 100  # most of them a fault caught, named


def test_a_shortcut_that_always_holds_is_caught() -> None:
    # The negative control: a shortcut that says True on every step hides the faults' violations.
    compared = compared_over(PLAYS[:3], lambda s, f: True, lambda s, f: True)
    assert compared.wrong, "an always-True shortcut went unnoticed"
    with shortcuts(lambda s, f: True, lambda s, f: True):
        blind = verdicts(PLAYS[:3], selections=False)
    with shortcuts(None, None):
        judged = verdicts(PLAYS[:3], selections=False)
    assert blind != judged
