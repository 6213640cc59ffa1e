"""The cyclic garbage collector while a search runs: its young generations as usual, no full
collection until the search ends.

A search allocates and frees a copy of a state for nearly every transition; reference counting frees
them, since neither the reference nor the monitor makes cycles. What the collector would still do is
walk every tracked object (the live states the frontier holds, the graph, every imported module) each
time enough objects have reached its oldest generation: with a live frontier (`modelcheck`, `live`)
the frontier's states keep reaching it and dying there, and those full walks took a quarter of a
check's time (2,3,8,4,3,3). Young generations are still collected, so a scheduler that makes cycles
has them freed while they are young; cycles that grow old wait for the first full collection after
the search, when the thresholds are as they were.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

NEVER = 1 << 30  # an oldest-generation threshold no search reaches


@contextmanager
def young_only() -> Iterator[None]:
    """No full collection inside the block; the collector's thresholds restored after it."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1] if len(thresholds) > 1 else 10, NEVER)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
