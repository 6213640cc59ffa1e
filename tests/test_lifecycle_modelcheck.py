"""The model checker with stop and cancel actions: every emitted token may be a stop, any request
may be cancelled (between steps or while a plan is pending), and a cancel and a stop that must be
refused are offered in every state. The reference keeps every rule and every state invariant
(READY-WITHIN-BUDGET and ONE-PARTIAL among them, re-checked with stops and cancels, not assumed) at
the bound; each lifecycle fault is caught under its rule, with a workload that replays it."""

from __future__ import annotations

import pytest

from stallfree.faults import FAULTS, LIFECYCLE_FAULTS
from stallfree.proofs import controls
from stallfree.proofs.explicit import lifecycle
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.modelcheck import act, check
from stallfree.reference import Scheduler
from stallfree.spec import Config, Monitor
from stallfree.spec.reservation import invariants


def test_every_rule_and_invariant_holds_on_the_reference_with_stops_and_cancels() -> None:
    bounds = controls.lifecycle_bound()
    plain = check(Bounds(*(getattr(bounds, f) for f in ("token_budget", "max_seqs", "kv_tokens", "num_requests",
                                                        "max_prompt", "max_new"))))
    result = check(bounds)
    assert result.holds, result.counterexample and result.counterexample.describe()
    assert "READY-WITHIN-BUDGET" in invariants.INVARIANT_IDS and "ONE-PARTIAL" in invariants.INVARIANT_IDS
    # the stop and cancel actions ran: many more transitions over the same states
    assert result.transitions > 4 * plain.transitions and result.states >= plain.states
    assert result.drain_bound == plain.drain_bound  # stops and cancels never make draining longer
    assert bounds.label() == f"{controls.CONTROL_BOUND}+stops,cancels"


def test_the_actions_do_what_they_say() -> None:
    m = Monitor(Scheduler(4, 2, 20), Config(4, 2, 20))
    act(m, (2, 3))
    act(m, (2, 3))
    act(m, lifecycle.Stop(0b10))  # both prompts in one step; the second's first token is a stop
    assert [t.rid for t in m.shadow.running.values()] == [0]
    act(m, lifecycle.CancelNow(0))
    assert m.is_idle
    with pytest.raises(lifecycle.Disabled):
        act(m, lifecycle.CancelNow(0))
    act(m, lifecycle.CancelUnknown())  # refused, judged by CANCEL
    act(m, lifecycle.BadStop())  # refused, judged by TOKENS; the step then runs
    assert m.num_steps == 2


@pytest.mark.parametrize("fault", [FAULTS["CANCEL"], *LIFECYCLE_FAULTS], ids=lambda f: f"{f.breaks}-{f.__name__}")
def test_each_lifecycle_fault_is_caught_under_its_rule(fault: type) -> None:
    result = check(controls.lifecycle_bound(), fault, controls.hidden_for(fault.breaks, fault))
    ce = result.counterexample
    assert ce is not None, f"the model checker missed {fault.__name__}"
    assert ce.rule == fault.breaks, ce.describe()
    if fault.__name__ == "StopsAnyRid":  # a refused stop has no workload form (play offers none)
        assert "complete(plan, stopped=[-1]) was refused" in ce.message or "was accepted" in ce.message
        return
    assert ce.replayed is not None and ce.replayed.startswith(fault.breaks), ce.describe()
