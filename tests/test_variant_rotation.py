"""A budget changed while running (stallfree.spec.variants.budget_change): set_budget in the protocol, the
rotating variant keeping DECODE-FAIR and its bound DECODE-WAIT, oldest-first failing both after a
budget drop, and each rule catching its fault."""

from __future__ import annotations

import random
from typing import Any

import pytest
from violations import first_violation

from stallfree.faults.budget import BUDGET_FAULTS
from stallfree.spec import Arrival, Config, RuleViolation, Workload, play
from stallfree.spec.shown import shown
from stallfree.spec.variants.budget_change import BUDGET_CONTRACT, ROTATION_CONTRACT
from stallfree.spec.workload import BudgetChange
from stallfree.variants.rotating import Resizable, Rotating

BAD = (0, -3, True, 2.0, "4")


def busy_workload(rng: random.Random) -> Workload:
    """Several short prompts decoding at once, then budget drops below their number and rises again,
    with a bad value (which set_budget must refuse) now and then."""
    budget = rng.randint(2, 12)
    num = rng.randint(2, 10)
    requests = [Arrival(i, rng.randint(1, 10), rng.randint(3, 20), rng.randint(0, 12)) for i in range(num)]
    changes = [BudgetChange(rng.randint(0, 30), rng.choice((1, 1, 2, 3, rng.randint(1, budget), rng.choice(BAD))))
               for _ in range(rng.randint(1, 5))]
    kv = rng.choice((30, 100, 400))
    return Workload(Config(budget, rng.randint(2, 8), kv), tuple(requests),
                    tuple(sorted(changes, key=lambda c: c.step)))


WORKLOADS = [busy_workload(random.Random(seed)) for seed in range(150)]


DROP = Workload(Config(4, 4, 200), tuple(Arrival(i, 2, 12, 0) for i in range(4)), (BudgetChange(2, 1),))


def test_rotating_keeps_the_rotation_contract() -> None:
    assert first_violation(WORKLOADS, Rotating, ROTATION_CONTRACT) is None


def test_resizable_keeps_the_budget_change_contract() -> None:
    assert first_violation(WORKLOADS, Resizable, BUDGET_CONTRACT) is None


def test_DECODE_FAIR_breaks_on_oldest_first_after_a_budget_drop() -> None:
    with pytest.raises(RuleViolation) as caught:
        play(DROP, Resizable, contract=ROTATION_CONTRACT)
    assert caught.value.rule == "DECODE-FAIR" and caught.value.step == 3


def test_DECODE_WAIT_breaks_on_oldest_first_after_a_budget_drop() -> None:
    # Budget 1 for 3 ready streams: the bound is ceil(3/1) - 1 = 2 steps; oldest-first starves rid 1 longer.
    with pytest.raises(RuleViolation, match=r"bound is ceil\(3/1\) - 1 = 2") as caught:
        play(DROP, Resizable, ["DECODE-WAIT"], contract=ROTATION_CONTRACT)
    assert caught.value.rule == "DECODE-WAIT"


def test_DECODE_WAIT_bound_is_reached_by_rotation() -> None:
    longest: list[int] = []

    def on_step(monitor, facts) -> None:  # type: ignore[no-untyped-def]
        longest.append(max((r.steps for r in monitor.shadow.runs.values()), default=0))

    play(DROP, Rotating, contract=ROTATION_CONTRACT, on_step=on_step)
    assert max(longest) == 2


def test_DECODE_FIRST_breaks_on_rotation_after_a_budget_drop() -> None:
    # The reference's rule asks for the oldest: rotation keeps its own contract, not that one.
    with pytest.raises(RuleViolation) as caught:
        play(DROP, Rotating, contract=BUDGET_CONTRACT)
    assert caught.value.rule == "DECODE-FIRST"


@pytest.mark.parametrize("rule", sorted(BUDGET_FAULTS))
def test_budget_rule_catches_its_fault(rule: str) -> None:
    violation = first_violation(WORKLOADS, BUDGET_FAULTS[rule], ROTATION_CONTRACT, [rule])
    assert violation is not None and violation.rule == rule


@pytest.mark.parametrize("bad", BAD)
def test_BUDGET_CHANGE_refuses_a_bad_budget_with_state_unchanged(bad: object) -> None:
    s = Rotating(4, 2, 100)
    with pytest.raises((ValueError, TypeError), match="token_budget"):
        s.set_budget(bad)  # type: ignore[arg-type]
    assert s.config == Config(4, 2, 100)


def test_READY_WITHIN_BUDGET_is_no_longer_a_theorem_after_a_drop() -> None:
    from stallfree.spec.reservation import invariants

    states: list[str | None] = []
    play(DROP, Rotating, contract=ROTATION_CONTRACT,
         on_step=lambda m, f: states.append(invariants.ready_within_budget(m.shadow, shown(m.scheduler))))
    assert any(s is not None for s in states)


class Reusing(Rotating):
    """Rotation that forgets a request cancelled between steps, so its rid may name a new request."""

    def on_cancel(self, seq: Any) -> None:
        super().on_cancel(seq)
        del self.seqs[seq.rid]


def cancelled_then_reused(monitor: Any) -> None:
    """Three ready requests at budget 1: rid 2 goes two steps without a token (DECODE-WAIT's bound,
    ceil(3/1) - 1), is cancelled between steps, and its rid comes back as a new request that is ready
    the next step; that step it is the newest ready request, so rotation skips it once."""
    for rid in range(3):
        assert monitor.add(rid, 1, 20)
    monitor.plan()
    monitor.complete()  # all three prefilled, one token each
    assert monitor.set_budget(1)
    for _ in range(2):  # rids 0 and 1 served, rid 2 waits two steps: within its bound
        monitor.plan()
        monitor.complete()
    assert monitor.cancel(2)
    assert monitor.add(2, 1, 20)
    assert monitor.set_budget(3)
    monitor.plan()
    monitor.complete()  # 0 and 1 decode, the new rid 2 is prefilled: its first token
    assert monitor.set_budget(1)
    monitor.plan()
    monitor.complete()  # rid 0 served; the new rid 2 waits its first step


def test_a_rid_cancelled_between_steps_and_reused_starts_a_fresh_run() -> None:
    """DECODE-WAIT counts the new request's own run, not the run of the cancelled request whose rid
    it reuses: rotation keeps the contract, and the cancelled request's records are gone."""
    monitor = ROTATION_CONTRACT.watch(Reusing(3, 3, 100), Config(3, 3, 100))
    cancelled_then_reused(monitor)  # a stale run would make it 3 steps > 2: a false DECODE-WAIT
    assert monitor.shadow.runs[2].steps == 1 and monitor.shadow.runs[1].steps == 1


def cancel_between_steps(monitor: Any) -> None:
    assert monitor.cancel(1)


def cancel_while_pending(monitor: Any) -> None:
    monitor.plan()
    assert monitor.cancel(1)
    monitor.complete()


def stop(monitor: Any) -> None:
    monitor.plan()
    monitor.complete([1])  # rid 1's token this step is its last


@pytest.mark.parametrize("end", [cancel_between_steps, cancel_while_pending, stop])
def test_a_request_that_ends_early_leaves_no_record(end: Any) -> None:
    """However it ends, a request's last token and run are forgotten with it (a cancel between steps
    ends it in cancel(); the others in complete())."""
    monitor = ROTATION_CONTRACT.watch(Rotating(3, 3, 100), Config(3, 3, 100))
    for rid in range(2):
        assert monitor.add(rid, 1, 20)
    monitor.plan()
    monitor.complete()
    assert monitor.set_budget(1)
    monitor.plan()
    monitor.complete()  # rid 1 waits: a run of one step
    assert 1 in monitor.shadow.runs and 1 in monitor.shadow.last_token
    end(monitor)
    assert 1 not in monitor.shadow.tracks
    assert 1 not in monitor.shadow.runs and 1 not in monitor.shadow.last_token
