"""The model checker copies the reference scheduler its own way (`proofs.explicit.reference_copy`),
and the shadow copies itself (`__deepcopy__`), for the search's branching: each copy must be what a
field-by-field deep copy makes: equal, sharing nothing that changes, and keeping which containers
point at one object. Checked on states from random workloads
with stops and cancels (a cancel while a plan is pending included), with copies that break each
promise shown failing the check; and the monitor's own `__copy__` is what `copy.copy` makes."""

from __future__ import annotations

import copy
import random
from collections import deque
from typing import Any

import pytest

from stallfree.proofs.explicit.clone import clone, clone_each
from stallfree.proofs.explicit.reference_copy import copy_scheduler
from stallfree.proofs.explicit.snapshot import fork
from stallfree.reference import Scheduler
from stallfree.reference.sequence import Sequence
from stallfree.reference.step import Step
from stallfree.spec import Config, Monitor
from stallfree.spec.reservation.shadow import Shadow
from stallfree.spec.utils import copies
from stallfree.spec.variants.budget_change import BudgetShadow

IMMUTABLE = (int, str, bool, float, type(None), frozenset)


def same_structure(a: Any, b: Any, pairs: dict[int, int] | None = None) -> None:
    """Raise AssertionError unless `b` is a deep copy of `a`: equal values, no mutable object shared,
    and one copy for each object `a` reaches twice (the pairing of objects is one to one)."""
    pairs = {} if pairs is None else pairs
    assert type(a) is type(b), f"{type(a).__name__} copied as {type(b).__name__}"
    if isinstance(a, IMMUTABLE) or ((isinstance(a, tuple) and not hasattr(a, "__dict__")) and all(
            isinstance(v, IMMUTABLE) for v in a)):
        assert a == b
        return
    if hasattr(type(a), "__dataclass_params__") and type(a).__dataclass_params__.frozen:  # type: ignore[attr-defined]
        assert a == b
        return
    if hasattr(type(a), "__members__"):  # an enum
        assert a is b
        return
    if id(a) in pairs:
        assert pairs[id(a)] == id(b), f"a {type(a).__name__} reached twice was copied twice (aliasing lost)"
        return
    assert a is not b or isinstance(a, tuple), f"a {type(a).__name__} is shared by the copy"
    assert id(b) not in pairs.values(), f"two objects copied into one {type(b).__name__}"
    pairs[id(a)] = id(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same_structure(a[k], b[k], pairs)
    elif isinstance(a, list | deque | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same_structure(x, y, pairs)
    elif isinstance(a, set):
        assert a == b and all(isinstance(v, IMMUTABLE) for v in a)
    else:
        names = [n for k in type(a).__mro__ for n in k.__dict__.get("__slots__", ()) if hasattr(a, n)]
        names += list(getattr(a, "__dict__", {}))
        assert names, f"nothing to compare in a {type(a).__name__}"
        for name in names:
            same_structure(getattr(a, name), getattr(b, name), pairs)


def states(seed: int, count: int) -> list[Monitor]:
    """`count` monitored reference states from random adds (some that can never fit), steps, stops and
    cancels (some cancels while a plan is pending), each kept as a copy."""
    rng = random.Random(seed)
    monitor = Monitor(Scheduler(6, 4, 40), Config(6, 4, 40))
    rid, kept = 0, []
    while len(kept) < count:
        roll = rng.random()
        if roll < 0.35 and len(monitor.shadow.tracks) < 8:
            never_fits = rng.random() < 0.1  # refused (NEVER-FIT): the shadow records the rid as rejected
            monitor.add(rid, 50 if never_fits else rng.randint(1, 9), rng.randint(1, 5))
            rid += 1
        elif roll < 0.45 and monitor.shadow.tracks:
            monitor.cancel(rng.choice(sorted(monitor.shadow.tracks)))
        else:
            monitor.plan()
            live = sorted(monitor.shadow.tracks)
            if roll < 0.55 and live:  # a cancel while the plan is pending: it ends at complete()
                monitor.cancel(rng.choice(live))
                kept.append(fork(monitor))
            emitting = [t.rid for t in monitor.shadow.running.values() if t.is_ready]
            monitor.complete([r for r in emitting if rng.random() < 0.2])
        kept.append(fork(monitor))
    return kept


@pytest.mark.parametrize("seed", range(4))
def test_own_copies_are_deep_copies_on_random_states(seed: int) -> None:
    cancelled_pending = rejected = 0
    for monitor in states(seed, 150):
        same_structure(monitor.scheduler, copy_scheduler(monitor.scheduler, {}))
        same_structure(monitor.shadow, copy.deepcopy(monitor.shadow))
        assert type(monitor.shadow).__dict__["__deepcopy__"]  # the class defines its own copy (it does not inherit one)
        step = monitor.scheduler._step
        cancelled_pending += bool(step.plan is not None and step.cancelled)
        rejected += bool(monitor.shadow.rejected)
        both = clone_each(monitor.scheduler, monitor.shadow)
        same_structure((monitor.scheduler, monitor.shadow), tuple(both))
    assert cancelled_pending > 0 and rejected > 0  # states with a cancel pending, and with refused rids


def test_a_copy_continues_as_the_original_does_and_leaves_it_alone() -> None:
    for monitor in [m for m in states(7, 60) if m.pending is None][::6]:
        before = repr(vars(monitor.scheduler)), repr(monitor.shadow)
        twin = fork(monitor)
        for rid in range(100, 103):
            twin.add(rid, 2, 2)
        for _ in range(12):
            twin.step()
        assert (repr(vars(monitor.scheduler)), repr(monitor.shadow)) == before
        again = fork(monitor)
        for rid in range(100, 103):
            again.add(rid, 2, 2)
        for _ in range(12):
            again.step()
        assert repr(vars(again.scheduler)) == repr(vars(twin.scheduler))


def shares_running(s: Scheduler, memo: dict[int, Any]) -> Scheduler:
    new = copy_scheduler(s, memo)
    new._running = s._running  # shared: a step of the copy would move the original
    return new


def splits_running(s: Scheduler, memo: dict[int, Any]) -> Scheduler:
    new = copy_scheduler(s, memo)
    # not the sequences the cancels hold
    new._running = {rid: Sequence(q.request, q.num_prefilled, q.first_token_step) for rid, q in s._running.items()}
    return new


def drops_cancels(s: Scheduler, memo: dict[int, Any]) -> Scheduler:
    new = copy_scheduler(s, memo)
    new._step = Step(s._step.number, s._step.plan, {}, new._step.ended)  # the cancel waiting for it lost
    return new


@pytest.mark.parametrize(("broken", "says"), [(shares_running, "shared"), (splits_running, "copied twice|two objects"),
                                              (drops_cancels, r"\[0\] == \[\]")])
def test_the_check_fails_a_copy_that_shares_splits_or_drops(broken: Any, says: str) -> None:
    scheduler = Scheduler(4, 3, 30)
    for rid in range(4):
        scheduler.add(rid, 6, 2)
    scheduler.complete(scheduler.schedule())
    scheduler.schedule()
    scheduler.cancel(0)  # running, with a plan pending: it waits for that plan
    same_structure(scheduler, copy_scheduler(scheduler, {}))
    with pytest.raises(AssertionError, match=says):
        same_structure(scheduler, broken(scheduler, {}))


def test_subclasses_are_copied_field_by_field_with_their_own_fields() -> None:
    class Counting(Scheduler):
        def __init__(self, *args: int) -> None:
            super().__init__(*args)
            self.seen: list[int] = []

    scheduler = Counting(4, 3, 30)
    scheduler.add(0, 5, 2)
    scheduler.seen.append(1)
    for twin in (copy.deepcopy(scheduler), clone(scheduler)):  # a subclass is walked: its own fields are copied
        same_structure(scheduler, twin)
        assert type(twin) is Counting and twin.seen == [1] and twin.seen is not scheduler.seen
    shadow = BudgetShadow(Config(4, 3, 30))
    shadow.last_token[3] = 7
    copied = copy.deepcopy(shadow)
    same_structure(shadow, copied)
    assert type(copied) is BudgetShadow and copied.last_token == {3: 7}
    assert "__deepcopy__" not in Counting.__dict__ and "__deepcopy__" in Shadow.__dict__


def test_the_monitor_copy_is_what_copy_copy_makes() -> None:
    monitor = Monitor(Scheduler(4, 3, 30), Config(4, 3, 30), rules=("TOKENS", "KV"))
    monitor.add(0, 3, 2)
    monitor.step()
    twin = copy.copy(monitor)
    assert type(twin) is Monitor and twin.scheduler is monitor.scheduler and twin.shadow is monitor.shadow
    assert [r.id for r in twin.rules] == ["KV", "TOKENS"] and twin.checks_per_step == monitor.checks_per_step
    assert (twin.num_steps, twin.num_busy_steps, twin.num_adds) == (1, 1, 1)
    everything = copy.copy(Monitor(Scheduler(4, 3, 30), Config(4, 3, 30)))
    assert len(everything.rules) > 2


class Private:
    """A private slot is held under its class's name (`_Private__held`): a copy that reads the slot
    names as declared misses it and leaves the field out."""

    __slots__ = ("__held", "shown")

    def __init__(self) -> None:
        self.__held = [1]
        self.shown = [2]

    def held(self) -> list[int]:
        return self.__held


def test_a_private_slot_is_copied_by_both_copiers() -> None:
    obj = Private()
    for copied in (copies.fields(obj, {}), clone(obj)):
        assert copied.held() == [1] and copied.held() is not obj.held()
        assert copied.shown == [2] and copied.shown is not obj.shown


def test_what_a_copy_shares_with_other_objects_copied_beside_it_stays_shared() -> None:
    """One deep copy, one memo: a track or sequence the shadow or scheduler holds, copied beside it,
    is the copy's own track or sequence, as a field-by-field deep copy makes it."""
    monitor = Monitor(Scheduler(8, 3, 30), Config(8, 3, 30))
    monitor.add(0, 6, 3)
    monitor.add(1, 5, 3)
    monitor.step()
    track, seq = monitor.shadow.tracks[0], monitor.scheduler._running[0]
    both = (monitor.shadow, [track], monitor.scheduler, [seq])
    for shadow, tracks, scheduler, seqs in (copy.deepcopy(both), clone(both)):
        assert tracks[0] is shadow.tracks[0] and seqs[0] is scheduler._running[0] and seqs[0] is not seq
        ready = next(iter(scheduler._ready))
        assert scheduler._ready[ready] is scheduler._running[ready].decode


def test_the_reference_copy_is_written_from_the_declared_fields_and_refuses_a_type_it_cannot_copy() -> None:
    """`reference_copy` writes one line a declared field, shaped by its type: a declaration with a
    field trimmed writes a copy without it, and a field of a type it does not know stops it, naming
    the field (a copy that guessed would share or drop state)."""
    from stallfree.proofs.explicit import reference_copy
    from stallfree.reference.views import Views

    fields = reference_copy.declared(Views)
    assert "_waiting" in fields and "_running" in fields
    trimmed = reference_copy.Writer()
    trimmed.function(Scheduler, {k: v for k, v in fields.items() if k != "_running"})
    text = "\n".join(trimmed.lines)
    assert "new._waiting = " in text and "_running" not in text
    with pytest.raises(TypeError, match=r"Scheduler\._odd: cannot copy"):
        reference_copy.Writer().function(Scheduler, {**fields, "_odd": bytearray})
