"""The simulator's hashed priorities: each rid a fixed level, the levels in the stated mix."""

from collections import Counter

import pytest

from stallfree.sim.priorities import hashed_priority


def test_levels_follow_the_shares_and_are_fixed_per_rid():
    priority_of = hashed_priority((40, 30, 20, 10))
    counts = Counter(priority_of(rid) for rid in range(20_000))
    assert set(counts) == {0, 1, 2, 3}
    for level, share in enumerate((40, 30, 20, 10)):
        assert abs(counts[level] / 20_000 * 100 - share) < 2, (level, counts)
    assert [priority_of(rid) for rid in range(50)] == [priority_of(rid) for rid in range(50)]


def test_a_zero_share_level_is_never_drawn():
    priority_of = hashed_priority((0, 100))
    assert {priority_of(rid) for rid in range(1_000)} == {1}


@pytest.mark.parametrize("shares", [(), (50, 40), (120, -20)])
def test_shares_that_do_not_sum_to_100_are_refused(shares):
    with pytest.raises(ValueError, match="shares"):
        hashed_priority(shares)
