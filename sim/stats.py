"""Percentiles of a sample: the figures every latency report quotes."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass

QUANTILES = (0.5, 0.9, 0.99)


def quantile(ordered: list[float], q: float) -> float:
    """Nearest-rank quantile of an ascending, non-empty list: the smallest value with at least a
    share `q` of the sample at or below it (so p99 of 100 values is the 99th, a value that occurred)."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass(frozen=True, slots=True)
class Spread:
    count: int
    mean: float
    p50: float
    p90: float
    p99: float
    max: float

    def to_json(self) -> dict[str, float]:
        return asdict(self)

    def scaled(self, factor: float) -> Spread:
        """The same figures in another unit (count unchanged)."""
        return Spread(self.count, self.mean * factor, self.p50 * factor, self.p90 * factor,
                      self.p99 * factor, self.max * factor)


def spread(values: Iterable[float | None]) -> Spread | None:
    """Count, mean, p50 / p90 / p99 and max of the values that are not None; None if there are none."""
    ordered = sorted(v for v in values if v is not None)
    if not ordered:
        return None
    p50, p90, p99 = (quantile(ordered, q) for q in QUANTILES)
    return Spread(len(ordered), math.fsum(ordered) / len(ordered), p50, p90, p99, ordered[-1])
