"""A target whose module registers its own design: the design's rules judge in the command (its module
imported there, as a rule is the oracle's), while the scheduler's calls run in a host process of their
own, so a call stuck in C is stopped from outside and a scheduler that turns the rule's check off where
it runs is judged all the same. Each is a child `stallfree trace`, waited on as an event."""

from __future__ import annotations

import functools

import hostile
from hostile import EVENT_LIMIT_S, assert_refused

spawn = functools.partial(hostile.spawn, timeout=EVENT_LIMIT_S)  # the limit only turns a hang into a failure
REQUESTS = ["--request", "0:4:3@0", "--request", "1:4:3@0", "--budget", "8", "--max-seqs", "2"]


def trace(name: str, *more: str) -> hostile.Ran:
    return spawn(["trace", "--scheduler", f"hostile_registered:{name}", *REQUESTS, *more])


def test_the_design_the_module_registers_judges_its_schedulers() -> None:
    kept, broken = trace("OneSlot"), trace("AllSlots")  # the pair: the rule can fail
    assert kept.status == 0 and "ONE-SLOT" in kept.out and "WORK-CONSERVING" not in kept.out, kept.err[-2000:]
    assert broken.status == 1 and "ONE-SLOT         BROKEN at step 0" in broken.out, broken.out[-2000:]


def test_a_call_stuck_in_c_under_a_registered_design_is_stopped_from_outside() -> None:
    ran = trace("LongCCall", "--timeout", "1")  # in process, no signal would reach the C call
    assert_refused(ran, "did not answer", "schedule() did not return within 1 s", status=3)


def test_a_scheduler_that_turns_its_rule_off_where_it_runs_is_judged_all_the_same() -> None:
    ran = trace("PatchesTheRule")  # in process, it would turn the oracle's check off and read "holds"
    assert ran.status == 1 and "ONE-SLOT         BROKEN at step 0" in ran.out, ran.out[-2000:]
