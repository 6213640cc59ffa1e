"""Each rule's check can fail: the monitor catches the deliberately wrong scheduler for every rule,
naming that rule; the reference and the correct stepwise policy pass the same workloads."""

from __future__ import annotations

import random

import pytest

from stallfree.faults import FAULTS, MORE_FAULTS
from stallfree.reference import Scheduler
from stallfree.spec import RULE_IDS, Arrival, Config, Ending, Monitor, Reason, RuleViolation, Workload, play, work_bound
from stallfree.testing.generate import LIFECYCLE, random_workload
from stallfree.variants import Stepwise

# Plain workloads first, then ones with stops and cancels (which CANCEL's fault needs).
WORKLOADS = [random_workload(random.Random(seed)) for seed in range(150)] + [
    random_workload(random.Random(seed), LIFECYCLE) for seed in range(40)]


def first_violation(
    factory: type, rules: list[str] | None = None, workloads: list[Workload] = WORKLOADS,
) -> tuple[RuleViolation, Workload] | None:
    for workload in workloads:
        try:
            play(workload, factory, rules)
        except RuleViolation as violation:
            return violation, workload
    return None


def test_every_rule_has_a_fault() -> None:
    assert sorted(FAULTS) == sorted(RULE_IDS)


@pytest.mark.parametrize("rule", RULE_IDS)
def test_monitor_catches_fault(rule: str) -> None:
    found = first_violation(FAULTS[rule])
    assert found is not None, f"no workload exposed {FAULTS[rule].__name__}"
    violation, workload = found
    assert violation.rule == rule, str(violation)
    assert f"{rule} at step {violation.step}: " in str(violation)
    # the counterexample replays: the same workload breaks the same rule at the same step
    with pytest.raises(RuleViolation) as again:
        play(Workload.loads(workload.dumps()), FAULTS[rule])
    assert (again.value.rule, again.value.step) == (rule, violation.step)


@pytest.mark.parametrize("rule", RULE_IDS)
def test_monitor_catches_fault_with_only_its_rule_checked(rule: str) -> None:
    # With only the fault's own rule checked, the fault is still caught: each check stands alone.
    found = first_violation(FAULTS[rule], [rule])
    assert found is not None and found[0].rule == rule


@pytest.mark.parametrize("factory", [Scheduler, Stepwise], ids=["reference", "stepwise"])
def test_correct_schedulers_pass(factory: type) -> None:
    for workload in WORKLOADS[:60]:
        play(workload, factory)


def monitored(config: Config, plans: list[list[tuple[int, int]]], emitted: list[list[int]]) -> Monitor:
    """A monitor over a scripted scheduler that returns the given plans and emissions."""

    class Scripted:
        def __init__(self) -> None:
            self.step = 0

        def add(self, rid: int, prompt_len: int, max_new: int) -> None:
            pass

        def schedule(self) -> list[tuple[int, int]]:
            return plans[self.step]

        def complete(self, plan: object) -> list[int]:
            self.step += 1
            return emitted[self.step - 1]

    return Monitor(Scripted(), config)


def test_FCFS_message_names_both_requests_and_the_step() -> None:
    m = monitored(Config(8, 4, 100), [[(5, 8)]], [[]])
    m.add(4, 10, 2)
    m.add(5, 10, 2)
    with pytest.raises(RuleViolation, match=r"^FCFS at step 0: admitted rid 5 while rid 4 waited ahead of it$"):
        m.step()


def test_DECODE_FIRST_names_the_ready_request_left_out() -> None:
    m = monitored(Config(8, 4, 100), [[(0, 8)], [(1, 8)]], [[0], []])
    m.add(0, 8, 3)
    m.step()
    m.add(1, 20, 2)
    with pytest.raises(RuleViolation, match=r"DECODE-FIRST at step 1: ready request\(s\) \[0\] got no token"):
        m.step()


def test_PROTOCOL_unknown_rid_and_junk_entries() -> None:
    m = monitored(Config(8, 4, 100), [[(9, 1)]], [[]])
    with pytest.raises(RuleViolation, match=r"PROTOCOL at step 0: plan names rid 9, which was never added"):
        m.step()
    m = monitored(Config(8, 4, 100), [["junk"]], [[]])  # type: ignore[list-item]
    with pytest.raises(RuleViolation, match=r"does not unpack as \(rid, n\)"):
        m.step()
    m = monitored(Config(8, 4, 100), [[(1, True)]], [[]])
    with pytest.raises(RuleViolation, match=r"rid and n must be ints"):
        m.step()


def test_ONE_ENTRY_zero_tokens() -> None:
    m = monitored(Config(8, 4, 100), [[(1, 0)]], [[]])
    m.add(1, 4, 1)
    with pytest.raises(RuleViolation, match=r"ONE-ENTRY at step 0: rid 1 is given n=0"):
        m.step()


def test_TOKENS_emitted_without_being_planned() -> None:
    m = monitored(Config(4, 4, 100), [[(1, 4)]], [[1, 2]])
    m.add(1, 4, 3)
    m.add(2, 4, 3)
    with pytest.raises(RuleViolation, match=r"TOKENS at step 0: rid 2 emitted a token but was not in the plan"):
        m.step()


def test_KV_all_free_at_the_end() -> None:
    s = Scheduler(token_budget=16, max_seqs=3, kv_tokens=100)
    m = Monitor(s, s.config)
    for rid in range(5):
        m.add(rid, 7 + rid, 3)
    while not m.is_idle:
        m.step()
    assert m.shadow.free_kv == s.free_kv == 100


class NeverPlans(Stepwise):
    """Accepts requests and never plans them: a scheduler that stalls for good."""

    def schedule(self) -> list[tuple[int, int]]:
        return []


def test_PROGRESS_stall_is_caught_and_play_stops_when_PROGRESS_is_off() -> None:
    workload = Workload(Config(4, 2, 50), (Arrival(0, 3, 2, 0),))
    with pytest.raises(RuleViolation, match=r"^PROGRESS at step 0: empty plan"):
        play(workload, NeverPlans)
    stats = play(workload, NeverPlans, ["BUDGET"])  # PROGRESS not checked: stops at the work bound
    assert stats.stopped_at_bound == work_bound(workload) == 6 and stats.finished == 0


@pytest.mark.parametrize("rule", RULE_IDS)
def test_faults_run_to_the_end_with_no_rule_checked(rule: str) -> None:
    # The shadow follows a scheduler even through broken rules it does not check: no crash, no hang.
    for workload in WORKLOADS[:40]:
        play(workload, FAULTS[rule], [])


def test_TOKENS_one_rid_emitted_twice_in_a_step() -> None:
    m = monitored(Config(8, 4, 100), [[(1, 4)], [(1, 1)]], [[1], [1, 1]])
    m.add(1, 4, 5)
    m.step()
    with pytest.raises(RuleViolation, match=r"^TOKENS at step 1: rid 1 emitted more than one token in one step$"):
        m.step()


def test_TOKENS_a_token_after_finishing() -> None:
    m = monitored(Config(8, 4, 100), [[(1, 4)], []], [[1], [1]])
    m.add(1, 4, 1)
    first = m.step()
    assert [t.rid for t in first.finished] == [1] and m.shadow.ended == {1: Ending(0, Reason.LENGTH)}
    with pytest.raises(RuleViolation, match=r"^TOKENS at step 1: complete\(\) says rid 1 emitted a token after it "
                                            r"finished at step 0$"):
        m.step()


def test_TOKENS_a_finished_request_planned_again() -> None:
    m = monitored(Config(8, 4, 100), [[(1, 4)], [(1, 1)]], [[1], [1]])
    m.add(1, 4, 1)
    m.step()
    with pytest.raises(RuleViolation, match=r"^TOKENS at step 1: plan names rid 1, which finished at step 0 "
                                            r"after emitting all its max_new tokens$"):
        m.step()


def test_PROTOCOL_emitted_rid_never_added() -> None:
    m = monitored(Config(8, 4, 100), [[(1, 4)]], [[7]])
    m.add(1, 4, 2)
    with pytest.raises(RuleViolation, match=r"^PROTOCOL at step 0: complete\(\) says rid 7 emitted a token, but it "
                                            r"was never added$"):
        m.step()


def test_TOKENS_a_repeated_rid_does_not_hide_the_rids_after_it() -> None:
    # rid 2's first token comes after rid 1's repeat: FIRST-TOKEN must still see it, so TOKENS is
    # the rule reported (the repeat), not FIRST-TOKEN.
    m = monitored(Config(8, 4, 100), [[(1, 4)], [(1, 1), (2, 3)]], [[1], [1, 1, 2]])
    m.add(1, 4, 5)
    m.step()
    m.add(2, 3, 2)
    with pytest.raises(RuleViolation, match=r"^TOKENS at step 1: rid 1 emitted more than one token in one step$"):
        m.step()


@pytest.mark.parametrize("fault", MORE_FAULTS, ids=lambda f: f.__name__)
def test_monitor_catches_the_further_faults_under_their_rule(fault: type) -> None:
    # OvercommitKV shows no free_kv, so KV's check after the step sees nothing: its plan check must.
    for rules in (None, [fault.breaks]):
        found = first_violation(fault, rules)
        assert found is not None, f"no workload exposed {fault.__name__}"
        assert found[0].rule == fault.breaks, str(found[0])
    assert not hasattr(fault(token_budget=8, max_seqs=2, kv_tokens=64), "free_kv")
