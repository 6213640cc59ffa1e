"""A scheduler may give ints of its own subclass (accepted: they are ints), but the oracle judges their
value alone: an int subclass's arithmetic, equality and hash are never used (spec/reservation/facts.py,
`exact`). Before, `0 + n` went through the subclass's `__radd__`, so a 100-token chunk could sum to 4
under budget 4 (BUDGET passed, shortcut or not), a 2-token decode could sum to 1 (the ordinary-step
shortcut passed TOKENS), and an emitted rid equal to everything could hide a duplicate."""

from __future__ import annotations

import pytest

from stallfree.reference import Scheduler
from stallfree.spec import RuleViolation, Workload, play
from stallfree.spec.reservation import monitor
from stallfree.spec.types import Config
from stallfree.spec.workload import Arrival


class AddsUpTo(int):
    """An int whose sum with anything is that plus `SHOWN`: its real value is never what a sum sees."""

    SHOWN = 1

    def __radd__(self, other: object) -> int:
        return other + self.SHOWN  # type: ignore[operator]


class FourWhenAdded(AddsUpTo):
    SHOWN = 4


class EqualsAll(int):
    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


class Scripted:
    """Shows one planted plan, then what `emitted` says."""

    def __init__(self, plan: list, emitted: list) -> None:  # type: ignore[type-arg]
        self.plan, self.emitted = plan, emitted

    def add(self, *args: object) -> None:
        pass

    def schedule(self) -> list:  # type: ignore[type-arg]
        return self.plan

    def complete(self, plan: object) -> list:  # type: ignore[type-arg]
        return self.emitted


class DoubleDecodes:
    """The reference, except that from step 3 each decode it shows is (rid, 2), as an `AddsUpTo`."""

    def __init__(self, **config: int) -> None:
        self.inner, self.step, self.ready = Scheduler(**config), 0, set()

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        self.inner.add(rid, prompt_len, max_new)

    @property
    def free_kv(self) -> int:
        return self.inner.free_kv

    def schedule(self) -> list:  # type: ignore[type-arg]
        self.real = self.inner.schedule()
        return [(r, AddsUpTo(2)) if self.step >= 3 and r in self.ready and n == 1 else (r, n)
                for r, n in self.real.entries]

    def complete(self, plan: object) -> tuple[int, ...]:
        self.step += 1
        emitted = self.inner.complete(self.real)
        self.ready |= set(emitted)
        return emitted


@pytest.fixture(params=["shortcut", "every check"])
def judged(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "every check":
        monkeypatch.setattr(monitor, "shortcut", lambda *args: None)
    return request.param


def step_once(plan: list, emitted: list, prompt_len: int = 100) -> None:  # type: ignore[type-arg]
    m = monitor.Monitor(Scripted(plan, emitted), Config(token_budget=4, max_seqs=2, kv_tokens=200))
    m.add(0, prompt_len, 1)
    m.step()


def test_a_chunk_whose_sum_lies_is_judged_by_its_value(judged: str) -> None:
    with pytest.raises(RuleViolation) as broken:
        step_once([(0, FourWhenAdded(100))], [])
    assert broken.value.rule == "BUDGET" and "100 tokens" in broken.value.message


def test_a_decode_of_two_tokens_is_judged_by_its_value(judged: str) -> None:
    w = Workload(Config(token_budget=8, max_seqs=4, kv_tokens=64), tuple(Arrival(i, 3, 6) for i in range(3)))
    with pytest.raises(RuleViolation) as broken:
        play(w, DoubleDecodes)
    assert (broken.value.rule, broken.value.step) == ("TOKENS", 3)
    assert "given n=2" in broken.value.message


def test_an_emitted_rid_equal_to_everything_is_judged_by_its_value(judged: str) -> None:
    # rid 0's one-token prompt completes: it emits once; a second rid equal to everything is rid 5,
    # never added, which a set of the subclass's own equality would have folded into rid 0
    with pytest.raises(RuleViolation) as broken:
        step_once([(0, 1)], [EqualsAll(0), EqualsAll(5)], prompt_len=1)
    assert broken.value.rule == "PROTOCOL" and "rid 5" in broken.value.message


def test_plain_int_subclasses_that_do_not_lie_still_hold(judged: str) -> None:
    class Rid(int):
        pass

    step_once([(Rid(0), Rid(1))], [Rid(0)], prompt_len=1)  # a whole one-token prompt: no rule breaks

