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


# (rid, prompt_len, max_new), the field the error must name, the value it must show
BAD_REQUESTS = [
    ((2, 0, 3), "prompt_len", "0"), ((2, -1, 3), "prompt_len", "-1"), ((2, 5, 0), "max_new", "0"),
    ((2, 5, -4), "max_new", "-4"), ((2, 5.0, 3), "prompt_len", "5.0"), ((2, 5, math.nan), "max_new", "nan"),
    ((2, True, 3), "prompt_len", "True"), ((2, 5, False), "max_new", "False"), ((2, "5", 3), "prompt_len", "'5'"),
    ((2, None, 3), "prompt_len", "None"), ((2, 5, None), "max_new", "None"),
    ((2, 10**30, 3), "prompt_len", str(10**30)), ((2, 5, 10**30), "max_new", str(10**30)),
    ((None, 5, 3), "rid", "None"), (("2", 5, 3), "rid", "'2'"), ((True, 5, 3), "rid", "True"),
    ((-2, 5, 3), "rid", "-2"), ((10**30, 5, 3), "rid", str(10**30)),
    ((1, 5, 2), "rid", "1"),  # duplicate rid (1 is waiting)
    ((0, 5, 2), "rid", "0"),  # duplicate rid (0 is running)
    ((2, 30, 11), "kv_tokens", "41"),  # never fits: 30 + 11 = 41 > kv_tokens=40
]


@pytest.mark.parametrize(("request_", "field", "value"), BAD_REQUESTS, ids=repr)
def test_NEVER_FIT_bad_request_raises_naming_field_and_value_and_changes_nothing(
    request_: tuple[object, object, object], field: str, value: str
) -> None:
    s = busy_scheduler()
    before = snapshot(s)
    with pytest.raises((ValueError, TypeError)) as error:
        s.add(*request_)  # type: ignore[arg-type]
    assert field in str(error.value) and value in str(error.value), str(error.value)
    assert snapshot(s) == before
    # and the scheduler goes on exactly as one that never saw the bad request
    twin = busy_scheduler()
    for _ in range(12):
        plan, twin_plan = s.schedule(), twin.schedule()
        assert list(plan) == list(twin_plan)
        assert s.complete(plan) == twin.complete(twin_plan)


def test_NEVER_FIT_a_request_of_exactly_K_is_accepted() -> None:
    s = Scheduler(token_budget=8, max_seqs=2, kv_tokens=40)
    s.add(7, 30, 10)
    assert s.progress(7).phase is Phase.WAITING


def test_NEVER_FIT_a_rid_is_taken_until_its_request_ends_then_free() -> None:
    s = Scheduler(token_budget=8, max_seqs=2, kv_tokens=40)
    s.add(1, 3, 1)
    with pytest.raises(ValueError, match="rid 1 is already taken"):
        s.add(1, 3, 1)
    s.complete(s.schedule())
    assert s.progress(1).phase is Phase.FINISHED
    s.add(1, 5, 2)  # ended: the scheduler keeps no record of it, and the rid is free again
    assert s.progress(1).phase is Phase.WAITING and s.progress(1).prompt_len == 5


def test_progress_of_unknown_rid_names_it() -> None:
    with pytest.raises(KeyError, match="rid 99"):
        Scheduler(token_budget=8, max_seqs=2, kv_tokens=40).progress(99)
