"""A priority for each rid from a mix of shares: the simulator's stand-in for a client's priority.

A trace carries no priorities, so the priority variant's runs give each rid a fixed pseudo-random
level (a multiplicative hash of the rid) drawn so that `shares[k]` percent of rids get level k.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def hashed_priority(shares: Sequence[int]) -> Callable[[int], int]:
    """`priority_of(rid)` for percentages `shares` (each >= 0, summing to 100) at levels 0, 1, ..."""
    levels = tuple(shares)
    if not levels or any(s < 0 for s in levels) or sum(levels) != 100:
        raise ValueError(f"shares {levels}: expected percentages >= 0 that sum to 100")

    def priority_of(rid: int) -> int:
        bucket = (rid * 2654435761) % 2**32 * 100 // 2**32
        edge = 0
        for level, share in enumerate(levels):
            edge += share
            if bucket < edge:
                return level
        return len(levels) - 1

    return priority_of
