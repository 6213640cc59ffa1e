"""The contract's state machine over the reference (and the stepwise policy, in deep runs): no rule
broken, the reference's post-conditions kept after every action, and the drawn configs reach the
edges the machine promises (budget 1, one slot, K equal to the largest request).

Examples come from the Hypothesis profile (`ci`: 60, derandomized; `deep`: 3000); the number of
actions per example from MACHINE_STEPS below."""

from __future__ import annotations

from typing import ClassVar

import pytest
from hypothesis import settings
from hypothesis.stateful import initialize, invariant, run_state_machine_as_test

from stallfree.reference import Scheduler
from stallfree.reference.postconditions import broken
from stallfree.spec import Config
from stallfree.testing.machine import configs, machine_for
from stallfree.variants import Stepwise

MACHINE_STEPS = {"deep": 300}  # actions per example by profile; Hypothesis' default (50) otherwise


def machine_settings() -> settings:
    """The loaded profile, with the number of actions the profile asks of a state machine."""
    steps = MACHINE_STEPS.get(settings.get_current_profile_name())
    return settings() if steps is None else settings(stateful_step_count=steps)


class EdgeRecorder(machine_for(Scheduler)):  # type: ignore[misc]
    """The reference machine, recording each drawn config so the test can see the edges were drawn."""

    seen: ClassVar[list[tuple[Config, int]]] = []  # filled by this test only

    @initialize(drawn=configs())
    def start(self, drawn: tuple[Config, int]) -> None:
        self.seen.append(drawn)
        super().start(drawn)

    @invariant()
    def postconditions(self) -> None:
        """The reference's own state after every action (stallfree.reference.postconditions)."""
        assert broken(self.m.scheduler) is None, broken(self.m.scheduler)


def test_reference_keeps_every_rule_in_the_state_machine() -> None:
    EdgeRecorder.seen.clear()
    run_state_machine_as_test(EdgeRecorder, settings=machine_settings())
    configs = EdgeRecorder.seen
    assert any(c.token_budget == 1 for c, _ in configs), "BUDGET edge: budget 1 never drawn"
    assert any(c.max_seqs == 1 for c, _ in configs), "SLOTS edge: one slot never drawn"
    assert any(c.kv_tokens == largest for c, largest in configs), "KV edge: K == largest never drawn"
    assert any(c.token_budget > 1 and c.max_seqs > 1 and c.kv_tokens > largest for c, largest in configs)


@pytest.mark.deep
def test_stepwise_policy_keeps_every_rule_in_the_state_machine() -> None:
    run_state_machine_as_test(machine_for(Stepwise), settings=machine_settings())


# The reference's machine as a plain test case too: how any project can check its scheduler.
TestReferenceMachine = machine_for(Scheduler).TestCase
TestReferenceMachine.settings = settings(max_examples=10, stateful_step_count=20)
