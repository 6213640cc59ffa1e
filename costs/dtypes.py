"""Number formats a deployment can hold its weights and KV cache in, and their widths."""

from __future__ import annotations

# Bytes per value. FP8 is E4M3 for weights and KV alike; its scales are per tensor and negligible here.
BYTES_PER_VALUE: dict[str, int] = {"fp8": 1, "bf16": 2, "fp16": 2}
DTYPES: tuple[str, ...] = tuple(BYTES_PER_VALUE)


def bytes_per_value(field: str, dtype: str) -> int:
    """The width of `dtype`; raises ValueError naming `field` and the value if it is unknown."""
    width = BYTES_PER_VALUE.get(dtype)
    if width is None:
        raise ValueError(f"{field} {dtype!r} is not a known dtype; choose one of {', '.join(DTYPES)}")
    return width
