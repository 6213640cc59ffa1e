"""The reference's post-conditions (stallfree.reference.postconditions) hold after every call of
random workloads with stops and cancels, each cites an ID of the spec, and each fails on a state
broken on purpose (its negative control)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from stallfree.reference import Scheduler
from stallfree.reference.postconditions import POSTCONDITIONS, broken
from stallfree.reference.sequence import Sequence
from stallfree.spec import Request, play
from stallfree.spec.reservation.invariants import INVARIANT_IDS
from stallfree.spec.reservation.rules import RULE_IDS
from stallfree.testing.generate import LIFECYCLE, Ranges, random_workload

NUM_WORKLOADS = 80


def test_every_postcondition_cites_a_spec_invariant_or_rule_and_states_itself() -> None:
    for p in POSTCONDITIONS:
        assert p.cites in INVARIANT_IDS or p.cites in RULE_IDS, p
        assert len(p.statement) > 20, p


def test_postconditions_hold_after_every_call_of_random_workloads_with_stops_and_cancels() -> None:
    made: list[Scheduler] = []
    checked = {"step": 0, "add": 0, "cancel": 0, "pending cancel": 0}

    def factory(**config: int) -> Scheduler:
        made.append(Scheduler(**config))
        return made[-1]

    def check(when: str) -> None:
        assert broken(made[-1]) is None, (when, broken(made[-1]))
        checked[when] += 1

    for i in range(NUM_WORKLOADS):
        ranges = LIFECYCLE if i % 2 else Ranges()
        play(random_workload(random.Random(f"post:{i}"), ranges), factory,
             on_step=lambda m, f: check("step"), on_add=lambda a, ok: check("add"),
             on_cancel=lambda c, ok, pending: check("pending cancel" if pending else "cancel"))
    assert all(checked.values()), checked


def loaded() -> Scheduler:
    """Request 0 ready, request 1 partial, request 2 waiting (no slot)."""
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=100)
    s.add(0, 2, 5)
    s.add(1, 10, 3)
    s.add(2, 3, 3)
    s.complete(s.schedule())
    assert broken(s) is None and list(s._ready) == [0] and list(s._running) == [0, 1]
    return s


def twice_placed(s: Scheduler) -> None:
    s._waiting[1] = s._running[1]  # running, and in the line again


def misfiled(s: Scheduler) -> None:
    s._waiting[9] = Sequence(Request(8, 1, 1))  # held at a rid not its own


def ready_behind(s: Scheduler) -> None:
    s._running[0] = s._running.pop(0)  # the ready request moved behind the partial one


def waiting_ran(s: Scheduler) -> None:
    s._waiting[2].num_prefilled = 1


def partial_done(s: Scheduler) -> None:
    s._running[1].num_prefilled = 10


def extra_slot(s: Scheduler) -> None:
    s.config = type(s.config)(4, 1, 100)


def kv_leak(s: Scheduler) -> None:
    s._free_kv -= 1


def over_budget(s: Scheduler) -> None:
    seq = s._running[1]  # made ready as complete() would have, so that only the budget is wrong
    seq.num_prefilled, seq.first_token_step = 10, 0
    s._ready[1] = seq.decode
    s._finishing.setdefault(2, []).append(seq)
    s.config = type(s.config)(1, 2, 100)


def two_partial(s: Scheduler) -> None:
    _, seq = s._waiting.popitem(last=False)
    s._running[seq.rid] = seq
    s._free_kv -= seq.request.reservation
    s.config = type(s.config)(4, 3, 100)


def late_finish(s: Scheduler) -> None:
    (due,) = s._finishing
    s._finishing[due + 1] = s._finishing.pop(due)


def stale_cancel(s: Scheduler) -> None:
    s.schedule()
    s._step.cancelled[2] = s._waiting[2]  # waiting, not running


def cancel_without_plan(s: Scheduler) -> None:
    s._step.cancelled[1] = s._running[1]  # running, but no plan is pending for it to end with


BREAKS: list[tuple[Callable[[Any], None], str, str]] = [
    (twice_placed, "TYPES", "one_place"), (misfiled, "TYPES", "one_place"),
    (ready_behind, "PARTIAL-NEXT", "ready_first"),
    (waiting_ran, "TYPES", "counters"), (partial_done, "TYPES", "counters"),
    (extra_slot, "SLOTS", "within_slots"), (kv_leak, "KV", "kv_count"),
    (over_budget, "READY-WITHIN-BUDGET", "ready_within_budget"), (two_partial, "ONE-PARTIAL", "one_partial"),
    (late_finish, "TOKENS", "calendar"), (stale_cancel, "CANCEL", "pending"),
    (cancel_without_plan, "CANCEL", "pending"),
]


@pytest.mark.parametrize(("breaks", "cites", "check"), BREAKS, ids=[b[0].__name__ for b in BREAKS])
def test_each_postcondition_fails_on_a_state_broken_on_purpose(breaks: Callable[[Any], None], cites: str,
                                                               check: str) -> None:
    s = loaded()
    breaks(s)
    found = broken(s)
    assert found is not None and found[0] == cites and found[1].startswith(check + ":"), found
