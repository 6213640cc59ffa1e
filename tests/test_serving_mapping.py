"""The vLLM deployment mapping's per-design entries (`serving/mapping.py:MAPPINGS`), in the main venv:
each design refuses prefix caching for its own rule, and NEVER-FIT is judged at each design's own
boundary (the reservation design: the longest request's whole reservation against K; the paged
design: its peak blocks against the pool less the watermark)."""

from __future__ import annotations

import pytest

from stallfree.paged import default_watermark
from stallfree.serving.mapping import DESIGNS, MAPPINGS, PAGED, RESERVATION, Deployment, blocks, refusals


def deployment(num_blocks: int, block_size: int, max_model_len: int, prefix: bool = False) -> Deployment:
    return Deployment(8, 4, num_blocks, block_size, max_model_len, enable_prefix_caching=prefix)


def test_every_design_has_a_mapping_and_only_those_are_designs() -> None:
    assert DESIGNS == tuple(MAPPINGS) == (RESERVATION, PAGED)
    assert refusals(deployment(9, 16, 16), "bogus") == ["design 'bogus' is unknown; the designs are reservation, paged"]


@pytest.mark.parametrize(("design", "rule"), [(RESERVATION, "PREFILL-ONCE"), (PAGED, "RECOMPUTE")])
def test_prefix_caching_is_refused_for_the_designs_own_rule(design: str, rule: str) -> None:
    found = refusals(deployment(200, 16, 64, prefix=True), design)
    assert len(found) == 1 and found[0].startswith("enable_prefix_caching=True") and rule in found[0]
    assert refusals(deployment(200, 16, 64), design) == []  # the control: without it the same config maps


@pytest.mark.parametrize("block_size", [1, 2, 16])
def test_reservation_never_fit_is_the_longest_reservation_against_K(block_size: int) -> None:
    longest_blocks = blocks(64, block_size)
    fits = deployment(longest_blocks + 1, block_size, 64)  # K = longest: every request can be reserved
    short = deployment(longest_blocks, block_size, 64)  # one block less
    assert refusals(fits, RESERVATION) == []
    found = refusals(short, RESERVATION)
    assert len(found) == 1 and "NEVER-FIT" in found[0] and "never be reserved" in found[0]


@pytest.mark.parametrize("block_size", [1, 2, 16])
def test_paged_never_fit_is_the_peak_against_the_pool_less_its_watermark(block_size: int) -> None:
    peak = blocks(64 - 1, block_size)
    usable = next(u for u in range(1, 10_000) if peak <= u - default_watermark(u))  # the smallest pool it fits
    assert refusals(deployment(usable + 1, block_size, 64), PAGED) == []
    found = refusals(deployment(usable, block_size, 64), PAGED)  # one block less
    assert len(found) == 1 and "NEVER-FIT" in found[0] and "run alone" in found[0]
