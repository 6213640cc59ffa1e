"""A progress line on stderr for long simulations, rewritten in place at most a few times a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO

REFRESH_SECONDS = 0.5
BAR_WIDTH = 30


class ProgressBar:
    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.perf_counter()
        self.shown_at = 0.0

    def update(self, done: int, clock: float) -> None:
        """`done` of `total` requests finished, `clock` seconds simulated."""
        now = time.perf_counter()
        if now - self.shown_at < REFRESH_SECONDS:
            return
        self.shown_at = now
        filled = BAR_WIDTH * done // self.total
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{self.total} requests, "
            f"{clock:,.0f} s simulated, {now - self.started:.0f} s"
        )
        self.stream.flush()

    def close(self, done: int, clock: float) -> None:
        self.shown_at = 0.0
        self.update(done, clock)
        self.stream.write("\n")
        self.stream.flush()
