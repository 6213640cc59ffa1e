"""The model checker: it explores the reference at a small bound without a violation, catches every
fault of the catalog with a counterexample that replays under the monitor, and its liveness analysis
finds a livelock when there is one."""

from __future__ import annotations

import random

import pytest

from stallfree.faults import FAULTS, MORE_FAULTS
from stallfree.proofs import controls
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.clone import clone
from stallfree.proofs.explicit.graph import STEP, Graph, analyse
from stallfree.proofs.explicit.modelcheck import act, check
from stallfree.proofs.explicit.snapshot import encode, fork
from stallfree.reference import Scheduler
from stallfree.spec import Config, InvalidField, Monitor

CI_BOUND = "2,3,8,3,3,3"  # S > B and M = 3


def test_ALL_RULES_hold_on_the_reference_at_the_ci_bound() -> None:
    result = check(Bounds.parse(CI_BOUND))
    assert result.counterexample is None, result.counterexample.describe()
    assert result.complete and result.holds
    assert result.states > 500 and result.transitions > result.states
    # PROGRESS: every state drains, within the work it holds; the longest behaviour is finite.
    assert result.drain_bound is not None and 0 < result.drain_bound <= 3 * (3 + 3)
    assert result.longest_steps is not None and result.longest_steps >= result.drain_bound


@pytest.mark.parametrize("rule", list(FAULTS))
def test_each_rule_is_caught_on_its_fault(rule: str) -> None:
    result = check(controls.control_bound(rule), controls.fault(rule), controls.hidden_for(rule))
    ce = result.counterexample
    assert ce is not None, f"the model checker missed {FAULTS[rule].__name__}"
    assert ce.rule == rule, ce.describe()
    assert ce.replayed is not None, "the counterexample workload must break a rule when replayed under the monitor"
    assert ce.workload.requests, "a counterexample is a workload with requests"


@pytest.mark.parametrize("fault", MORE_FAULTS, ids=lambda f: f.__name__)
def test_further_faults_are_caught_under_their_rule(fault: type) -> None:
    result = check(controls.control_bound(fault.breaks), fault, controls.hidden_for(fault.breaks))
    ce = result.counterexample
    assert ce is not None and ce.rule == fault.breaks and ce.replayed is not None


def test_NEVER_FIT_every_state_is_offered_a_request_that_cannot_fit() -> None:
    bounds = Bounds.parse("2,1,4,1,1,1")
    assert (4, 1) in bounds.universe()
    assert check(bounds).holds
    without = Bounds(2, 1, 4, 1, 1, 1, never_fit=False)
    assert (4, 1) not in without.universe()


def test_PROGRESS_stall_needs_its_hidden_state_in_the_key() -> None:
    """PeriodicStall's decisions depend on a step counter the shadow does not see; with it in the
    key, every phase of the counter is explored."""
    fault = controls.fault("PROGRESS")
    result = check(controls.control_bound("PROGRESS"), fault, controls.hidden_for("PROGRESS"))
    assert result.counterexample is not None and result.counterexample.rule == "PROGRESS"


def test_PROGRESS_livelock_is_found_by_the_liveness_analysis() -> None:
    graph = Graph(num_actions=2)
    root = graph.add_state(-1, STEP, True, 0)
    a = graph.add_state(root, 1, False, 3)
    b = graph.add_state(a, STEP, False, 2)
    graph.succ[root * 2 + STEP], graph.succ[root * 2 + 1] = root, a
    graph.succ[a * 2 + STEP], graph.succ[b * 2 + STEP] = b, a  # a -> b -> a: work never done
    assert analyse(graph).livelock == [a, b]


def test_PROGRESS_a_step_that_does_no_work_exceeds_the_ranking_bound() -> None:
    graph = Graph(num_actions=2)
    root = graph.add_state(-1, STEP, True, 0)
    a = graph.add_state(root, 1, False, 1)
    b = graph.add_state(a, STEP, False, 1)
    done = graph.add_state(b, STEP, True, 0)
    graph.succ[root * 2 + STEP], graph.succ[root * 2 + 1] = root, a
    graph.succ[a * 2 + STEP], graph.succ[b * 2 + STEP], graph.succ[done * 2 + STEP] = b, done, done
    liveness = analyse(graph)
    assert liveness.livelock is None and liveness.over_rank == (a, 2, 1)


def test_the_reference_has_no_hidden_state_states_with_one_key_continue_alike() -> None:
    """Random walks; whenever a key recurs on another walk, both copies are driven by the same
    actions and must keep the same key after each (the assumption behind the canonical key)."""
    config = Config(3, 2, 9)
    shapes = [(1, 1), (1, 2), (2, 2), (3, 1), (4, 2)]
    rng = random.Random(3)
    seen: dict[object, Monitor] = {}
    compared = 0
    for _ in range(300):
        monitor = Monitor(Scheduler(3, 2, 9), config)
        for _ in range(rng.randint(1, 12)):
            act(monitor, rng.choice([None, None, *shapes]) if monitor.num_adds < 5 else None)
            key = encode(monitor)
            other = seen.setdefault(key, fork(monitor))
            if other.scheduler.num_steps == monitor.scheduler.num_steps:
                continue
            compared += 1
            a, b = fork(monitor), fork(other)
            for _ in range(8):
                action = rng.choice([None, None, *shapes]) if a.num_adds < 5 else None
                act(a, action)
                act(b, action)
                assert encode(a) == encode(b)
    assert compared > 20


def test_clone_copies_state_and_keeps_aliasing() -> None:
    scheduler = Scheduler(4, 2, 16)
    scheduler.add(0, 3, 2)
    plan = scheduler.schedule()
    twin = clone(scheduler)
    twin.complete(plan)
    assert scheduler.num_steps == 0 and twin.num_steps == 1
    with pytest.raises(InvalidField):
        twin.add(0, 1, 1)


def test_bounds_errors_name_the_field() -> None:
    with pytest.raises(InvalidField, match="max_new"):
        Bounds.parse("1,1,4,1,1,x")
    with pytest.raises(InvalidField, match="6 ints"):
        Bounds.parse("1,2")


def test_compact_search_finds_what_the_live_one_does() -> None:
    """Fingerprints and a frontier rebuilt by replay: the same graph, the same counterexamples."""
    live, compact = check(Bounds.parse(CI_BOUND)), check(Bounds.parse(CI_BOUND), compact=True)
    assert (compact.states, compact.transitions, compact.drain_bound) == (live.states, live.transitions,
                                                                           live.drain_bound)
    for rule in ("FCFS", "PROGRESS", "TOKENS"):
        found = check(controls.control_bound(rule), controls.fault(rule), controls.hidden_for(rule), compact=True)
        assert found.counterexample is not None and found.counterexample.rule == rule


def test_worker_processes_find_what_one_process_does() -> None:
    """Two workers: the same graph (states, transitions, drain bound) and the same verdicts as the
    one-process search, an undeclared stall included."""
    one, two = check(Bounds.parse(CI_BOUND), compact=True), check(Bounds.parse(CI_BOUND), workers=2)
    assert two.holds and (two.states, two.transitions, two.depth, two.drain_bound, two.longest_steps) == (
        one.states, one.transitions, one.depth, one.drain_bound, one.longest_steps)
    for rule in ("FCFS", "PROGRESS", "TOKENS", "KV"):
        found = check(controls.control_bound(rule), controls.fault(rule), controls.hidden_for(rule), workers=2)
        assert found.counterexample is not None and found.counterexample.rule == rule
        assert found.counterexample.replayed is not None or rule == "PROGRESS"
    undeclared = check(controls.control_bound("PROGRESS"), controls.fault("PROGRESS"), None, workers=2)
    assert undeclared.counterexample is not None and undeclared.counterexample.rule == "PROGRESS"
    with pytest.raises(InvalidField, match="workers"):
        check(Bounds.parse(CI_BOUND), workers=2, inspect=lambda monitor: None)
