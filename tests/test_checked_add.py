"""Checked simulation's add (sim/checked.py): a request the contract plainly accepts (`plainly_accepted`) is
judged by the monitor once offered (`Watch.offered`), its `Request` built once; any other by `Watch.add`.
The verdicts are the monitor's own (NEVER-FIT, PROTOCOL), with the same message; negative control: the
plain test without its rid test accepts a taken rid and the verdict differs."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from stallfree.reference import Scheduler
from stallfree.sim import checked
from stallfree.spec import MAX_INT, Config, RuleViolation
from stallfree.spec.reservation import monitor as reservation_monitor
from stallfree.spec.reservation.monitor import plainly_accepted, refusal
from stallfree.spec.reservation.shadow import Shadow
from stallfree.spec.types import Request

CONFIG = Config(token_budget=8, max_seqs=2, kv_tokens=100)
VALUES = [-1, 0, 1, 2, 50, 99, 100, MAX_INT, MAX_INT + 1, True, 1.0, "1", None]


def test_a_plainly_accepted_add_is_one_the_contract_accepts() -> None:
    """NEVER-FIT, PROTOCOL: wherever the plain test says yes, `refusal` accepts (and it says yes on most)."""
    shadow = Shadow(CONFIG)
    shadow.accept(Request(7, 10, 10))
    said_yes = 0
    for rid, prompt_len, max_new in itertools.product([*VALUES, 7], VALUES, VALUES):
        if plainly_accepted(shadow, rid, prompt_len, max_new):
            said_yes += 1
            assert refusal(shadow, rid, prompt_len, max_new) is None, (rid, prompt_len, max_new)
    assert said_yes == 7 * 11  # the rids 0 to MAX_INT (not 7: taken); the 11 pairs of 1, 2, 50, 99 within K = 100


class RefusesThree(Scheduler):
    """Refuses the valid request of rid 3 (NEVER-FIT)."""

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        if rid == 3:
            raise ValueError("rid 3: not today")
        super().add(rid, prompt_len, max_new)


class TakesTwice(Scheduler):
    """Accepts a rid a waiting or running request holds (NEVER-FIT)."""

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        if rid in self._waiting or rid in self._running:
            return
        super().add(rid, prompt_len, max_new)


def verdict(scheduler: Any, shortcut: bool, adds: list[tuple[int, int, int]]) -> tuple[Any, ...]:
    run = checked.Checked(scheduler(CONFIG.token_budget, CONFIG.max_seqs, CONFIG.kv_tokens), CONFIG, shortcut=shortcut)
    try:
        for add in adds:
            run.add(*add)
    except RuleViolation as error:
        return ("broken", error.rule, error.step, str(error), run.monitor.num_adds)
    shadow = run.monitor.shadow
    return ("kept", sorted(shadow.tracks), run.monitor.num_adds)


ADDS = [(1, 10, 10), (2, 5, 5), (3, 10, 10), (1, 4, 4)]


@pytest.mark.parametrize("scheduler", [RefusesThree, TakesTwice])
def test_a_break_at_add_is_named_as_the_monitor_names_it(scheduler: Any) -> None:
    fast, slow = verdict(scheduler, True, ADDS), verdict(scheduler, False, ADDS)
    assert fast == slow
    assert fast[:2] == ("broken", "NEVER-FIT")


def test_the_reference_adds_as_the_monitor_does() -> None:
    fast, slow = verdict(Scheduler, True, ADDS[:3]), verdict(Scheduler, False, ADDS[:3])
    assert fast == slow == ("kept", [1, 2, 3], 3)


def test_a_plain_test_without_its_rid_test_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: `plainly_accepted` planted to forget taken rids lets TakesTwice's second add of rid 1
    reach the shadow as plainly accepted: PROTOCOL there, not the monitor's NEVER-FIT."""
    slow = verdict(TakesTwice, False, ADDS)

    def forgetful(shadow: Shadow, rid: object, prompt_len: object, max_new: object) -> bool:
        return type(rid) is int and refusal(Shadow(shadow.config), rid, prompt_len, max_new) is None

    monkeypatch.setattr(checked, "plainly_accepted", forgetful)
    fast = verdict(TakesTwice, True, ADDS)
    assert fast != slow
    assert (fast[1], slow[1]) == ("PROTOCOL", "NEVER-FIT")
    assert reservation_monitor.plainly_accepted is plainly_accepted  # only the copy `checked` reads was planted


class RefusesLate(Scheduler):
    """Refuses the valid request of rid 50, which arrives after steps the shortcut took (NEVER-FIT)."""

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        if rid == 50:
            raise ValueError("rid 50: not today")
        super().add(rid, prompt_len, max_new)


def test_a_break_at_add_names_the_step_as_the_monitor_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """NEVER-FIT's step, with the step counts left behind by the steps taken (`Moves.count` before an add's verdict).
    Negative control: with that count planted out of `Checked.add`, the verdict names an earlier step."""
    import inspect
    import types

    from test_checked_shortcut import SERVING, outcome

    from stallfree.sim import simulator

    slow, _ = outcome(False, monkeypatch, "conv", 60, RefusesLate, SERVING)
    fast, taken = outcome(True, monkeypatch, "conv", 60, RefusesLate, SERVING)
    assert fast == slow
    assert fast[:2] == ("broken", "NEVER-FIT") and fast[2] > 0 and taken > 0
    source = inspect.getsource(checked)
    text = "                fast.count()  # the step an add's verdict names\n"
    assert source.count(text) == 1
    copy = types.ModuleType("planted")
    copy.__package__ = checked.__package__
    exec(compile(source.replace(text, "                pass\n"), "planted", "exec"), copy.__dict__)
    monkeypatch.setattr(simulator, "Checked", copy.Checked)
    planted, _ = outcome(True, monkeypatch, "conv", 60, RefusesLate, SERVING)
    assert planted[:2] == ("broken", "NEVER-FIT") and planted[2] < slow[2]
