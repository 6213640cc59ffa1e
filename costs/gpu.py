"""An accelerator, described by its roofline: peak dense FLOP/s per dtype, memory bandwidth, memory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str
    peak_flops: Mapping[str, float]  # dense (no sparsity) FLOP/s by dtype; a dtype absent has no tensor cores
    mem_bandwidth: float  # bytes/s
    mem_bytes: float  # memory capacity, bytes
    source: str  # where the figures come from

    def flops(self, dtype: str) -> float:
        """Peak dense FLOP/s in `dtype`; raises ValueError naming the dtype if this GPU has none."""
        peak = self.peak_flops.get(dtype)
        if peak is None:
            raise ValueError(
                f"dtype {dtype!r}: {self.name} has no dense {dtype} tensor cores; "
                f"it has {', '.join(self.peak_flops)}"
            )
        return peak
