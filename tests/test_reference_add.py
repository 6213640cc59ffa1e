"""NEVER-FIT and field validation on the reference's add(): refused with a clear error, nothing changed."""

from __future__ import annotations

import math

import pytest

from stallfree.reference import Phase, Scheduler


def snapshot(s: Scheduler) -> tuple[object, ...]:
    return (s.waiting, s.running, s.free_kv, s.num_steps, s.is_idle)


def busy_scheduler() -> Scheduler:
    s = Scheduler(token_budget=8, max_seqs=2, kv_tokens=40)
    s.add(0, 12, 4)
    s.complete(s.schedule())
    s.add(1, 5, 2)
    return s


BAD_REQUESTS = [
    (2, 0, 3), (2, -1, 3), (2, 5, 0), (2, 5, -4), (2, 5.0, 3), (2, 5, math.nan), (2, True, 3),
    (2, 5, False), (2, "5", 3), (2, None, 3), (2, 5, None), (2, 10**30, 3), (2, 5, 10**30),
    (None, 5, 3), ("2", 5, 3), (True, 5, 3), (-2, 5, 3), (10**30, 5, 3),
    (1, 5, 2),  # duplicate rid (1 is waiting)
    (0, 5, 2),  # duplicate rid (0 is running)
    (2, 30, 11),  # never fits: 41 > kv_tokens=40
]


@pytest.mark.parametrize("request_", BAD_REQUESTS, ids=repr)
def test_NEVER_FIT_bad_request_raises_and_changes_nothing(request_: tuple[object, object, object]) -> None:
    s = busy_scheduler()
    before = snapshot(s)
    with pytest.raises((ValueError, TypeError)) as error:
        s.add(*request_)  # type: ignore[arg-type]
    assert str(error.value), "the error must say what was wrong"
    assert snapshot(s) == before
    # and the scheduler goes on exactly as one that never saw the bad request
    twin = busy_scheduler()
    for _ in range(12):
        assert list(s.schedule()) == list(twin.schedule())
        assert s.complete(s._planned) == twin.complete(twin._planned)  # type: ignore[arg-type]


def test_NEVER_FIT_a_request_of_exactly_K_is_accepted() -> None:
    s = Scheduler(token_budget=8, max_seqs=2, kv_tokens=40)
    s.add(7, 30, 10)
    assert s.progress(7).phase is Phase.WAITING


def test_finished_rid_stays_taken() -> None:
    s = Scheduler(token_budget=8, max_seqs=2, kv_tokens=40)
    s.add(1, 3, 1)
    s.complete(s.schedule())
    assert s.progress(1).phase is Phase.FINISHED
    with pytest.raises(ValueError, match="rid 1 is already taken"):
        s.add(1, 3, 1)


def test_progress_of_unknown_rid_names_it() -> None:
    with pytest.raises(KeyError, match="rid 99"):
        Scheduler(token_budget=8, max_seqs=2, kv_tokens=40).progress(99)
