"""The state invariants registry (`stallfree.spec.reservation.invariants`): each invariant holds on the reference's
states and is seen failing on a state or a scheduler that breaks it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from stallfree.reference import Scheduler
from stallfree.spec import Config, Monitor, Request, RuleViolation, Shadow
from stallfree.spec.invariant import Origin, broken
from stallfree.spec.reservation.invariants import INVARIANT_IDS, INVARIANTS
from stallfree.spec.shown import Shown, shown
from stallfree.testing.machine import machine_for


def running_state() -> Monitor:
    """Budget 4: rid 0 (prompt 3, max_new 4) ready and decoding, rid 1 (prompt 6) partial."""
    s = Scheduler(token_budget=4, max_seqs=4, kv_tokens=40)
    m = Monitor(s, s.config)
    m.add(0, 3, 4)
    m.add(1, 6, 2)
    m.step()
    m.step()
    return m


def test_every_invariant_holds_on_a_reference_state() -> None:
    m = running_state()
    assert m.shadow.num_ready == 1 and len(m.shadow.prefilling) == 1
    assert broken(m.shadow, shown(m.scheduler), INVARIANTS) is None


def test_registry_ids_and_origins() -> None:
    assert INVARIANT_IDS == ("TYPES", "SLOTS", "KV", "READY-WITHIN-BUDGET", "ONE-PARTIAL")
    derived = [i for i in INVARIANTS if i.origin is Origin.DERIVED]
    assert [i.id for i in derived] == ["READY-WITHIN-BUDGET", "ONE-PARTIAL"]
    assert all(i.premises for i in derived) and not any(i.premises for i in INVARIANTS if i not in derived)
    for invariant in INVARIANTS:
        assert (invariant.check.__doc__ or "").startswith(invariant.id + ":")


def corrupt(what: str) -> Shadow:
    shadow = running_state().shadow
    track = shadow.running[0]
    if what == "emitted past max_new":
        track.num_emitted = track.request.max_new + 1
    elif what == "ready and partial":
        shadow.prefilling[0] = track
    elif what == "ready count":
        shadow.num_ready += 1
    elif what == "free KV":
        shadow.free_kv -= 1
    elif what == "waiting has run":
        shadow.accept(Request(9, 2, 1))
        shadow.waiting[-1].num_prefilled = 1
    return shadow


@pytest.mark.parametrize("what", ["emitted past max_new", "ready and partial", "ready count", "free KV",
                                  "waiting has run"])
def test_TYPES_fails_on_a_corrupted_state(what: str) -> None:
    assert broken(corrupt(what), Shown(), INVARIANTS[:1]) is not None


def test_SLOTS_fails_on_too_many_running_and_on_a_wrong_view() -> None:
    m = running_state()
    check = dict((i.id, i.check) for i in INVARIANTS)["SLOTS"]
    assert check(m.shadow, Shown(num_running=1)) == "the scheduler shows 1 running request(s); the contract counts 2"
    small = Shadow(Config(4, 1, 40))
    small.running = dict(m.shadow.running)
    assert check(small, Shown()) == "2 requests running; max_seqs is 1"


def test_KV_fails_on_overcommit_a_wrong_view_and_idle_KV_held() -> None:
    check = dict((i.id, i.check) for i in INVARIANTS)["KV"]
    m = running_state()
    assert "shows free_kv=1" in (check(m.shadow, Shown(free_kv=1)) or "")
    m.shadow.free_kv = -3
    assert "reserve 43 KV tokens" in (check(m.shadow, Shown()) or "")
    idle = Shadow(Config(4, 4, 40))
    idle.free_kv = 39
    assert check(idle, Shown()) == "nothing runs, yet free KV is 39 of 40"


def test_derived_invariants_fail_on_states_their_premises_exclude() -> None:
    checks = dict((i.id, i.check) for i in INVARIANTS)
    m = running_state()
    m.shadow.num_ready = 5
    assert checks["READY-WITHIN-BUDGET"](m.shadow, Shown()) == "5 requests are ready; the budget is 4"
    m = running_state()
    m.shadow.prefilling[7] = m.shadow.running[0]
    assert checks["ONE-PARTIAL"](m.shadow, Shown()) is not None


class HidesOneRunning(Scheduler):
    """Keeps every step rule, but its `running` view leaves out the newest request (negative control
    for the state machine's SLOTS invariant)."""

    @property
    def running(self) -> tuple[Request, ...]:
        return super().running[:-1]


def test_state_machine_calls_the_registry_SLOTS_on_a_wrong_running_view() -> None:
    machine: Any = machine_for(HidesOneRunning, rules=["SLOTS"])
    with pytest.raises(RuleViolation, match=r"^SLOTS at step \d+: between steps: the scheduler shows"):
        run_state_machine_as_test(machine, settings=settings(max_examples=50, database=None, phases=[Phase.generate]))
