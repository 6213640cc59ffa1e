"""Request traces: arrival times in seconds, prompt lengths, tokens to generate.

Two traces ship in `data/` (Azure LLM inference traces 2023, CC BY 4.0; see data/README.md):
`code` (8,819 requests) and `conv` (19,366). Any CSV in the same form loads too, as does a plain
one with columns `arrival_s,prompt_len,max_new`. A row's rid is its index among the data rows.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

DATA = Path(__file__).parent / "data"
SHIPPED = {
    "code": DATA / "AzureLLMInferenceTrace_code.csv",
    "conv": DATA / "AzureLLMInferenceTrace_conv.csv",
}
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
PLAIN_COLUMNS = ("arrival_s", "prompt_len", "max_new")
Stamp = datetime | float  # an arrival as read: a timestamp (Azure) or seconds (plain)
Row = tuple[Stamp, int, int, int]  # (arrival as read, rid, prompt_len, max_new)


class TraceError(ValueError):
    """A trace file that cannot be read: the message names the file, the row and the field."""


MAX_TOKENS = 10_000_000  # a prompt or an output longer than any model's context is not a request
MAX_SECONDS = 1e9  # about 30 years: arrival times beyond are not a trace


@dataclass(frozen=True, slots=True)
class TraceRequest:
    rid: int
    arrival: float  # seconds after the trace's first arrival
    prompt_len: int
    max_new: int  # the tokens the request generated in the trace


@dataclass(frozen=True, slots=True)
class Trace:
    name: str
    requests: tuple[TraceRequest, ...]  # in arrival order

    @property
    def duration(self) -> float:
        """Seconds from the first arrival to the last."""
        return self.requests[-1].arrival if self.requests else 0.0

    def scaled(self, rate_scale: float) -> Trace:
        """The same requests arriving `rate_scale` times as fast (2: twice the rate)."""
        if not rate_scale > 0:
            raise ValueError(f"rate_scale must be > 0, got {rate_scale!r}")
        if rate_scale == 1:
            return self
        requests = tuple(replace(r, arrival=r.arrival / rate_scale) for r in self.requests)
        return Trace(f"{self.name} x{rate_scale:g}", requests)

    def head(self, limit: int) -> Trace:
        """The first `limit` requests."""
        return Trace(f"{self.name}[:{limit}]", self.requests[:limit])


def load(source: str | Path) -> Trace:
    """A shipped trace by name (`code`, `conv`) or a CSV file by path."""
    path = SHIPPED.get(str(source), Path(source))
    if not path.is_file():
        raise TraceError(f"trace {str(source)!r} is neither {' nor '.join(SHIPPED)} nor a file")
    name = str(source) if str(source) in SHIPPED else path.stem
    with path.open(newline="") as handle:
        rows = csv.reader(handle)
        header = tuple(cell.strip() for cell in next(rows, ()))
        parse_time: Callable[[str], Stamp]
        if header == AZURE_COLUMNS:
            parse_time = _timestamp
        elif header == PLAIN_COLUMNS:
            parse_time = _seconds
        else:
            raise TraceError(
                f"{path}: header {list(header)} is neither {list(AZURE_COLUMNS)} nor {list(PLAIN_COLUMNS)}"
            )
        parsed = [_row(path, i, row, header, parse_time) for i, row in enumerate(rows) if row]
    return Trace(name, _from_first_arrival(parsed))


def _row(path: Path, i: int, row: list[str], header: tuple[str, ...], parse_time: Callable[[str], Stamp]) -> Row:
    """One data row; errors name the file, the row and the column."""
    where = f"{path.name} data row {i}"
    if len(row) != len(header):
        raise TraceError(f"{where}: expected {len(header)} fields, got {len(row)}: {row!r:.80}")
    values = []
    for column, text in zip(header[1:], row[1:], strict=True):
        try:
            value = int(text)
        except ValueError:
            raise TraceError(f"{where}: {column} {text[:40]!r} is not an int") from None
        if not 0 <= value <= MAX_TOKENS:
            raise TraceError(f"{where}: {column} {value} must be from 0 to {MAX_TOKENS:,}")
        values.append(value)
    try:
        time = parse_time(row[0])
    except ValueError:
        raise TraceError(f"{where}: {header[0]} {row[0][:40]!r} is not a time") from None
    return time, i, values[0], values[1]


def _timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text.strip())


def _seconds(text: str) -> float:
    """Seconds, finite: nan and inf are not times (an arrival at inf would never come)."""
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_SECONDS:
        raise ValueError(text)
    return value


def _from_first_arrival(rows: list[Row]) -> tuple[TraceRequest, ...]:
    """Arrival order, times in seconds from the first arrival. Equal times keep file order.

    Timestamps carry no time zone and are only ever subtracted from each other."""
    rows.sort(key=lambda row: row[0])
    if not rows:
        return ()
    start = rows[0][0]
    return tuple(TraceRequest(rid, _seconds_between(start, t), p, m) for t, rid, p, m in rows)


def _seconds_between(start: Stamp, stamp: Stamp) -> float:
    if isinstance(start, datetime) and isinstance(stamp, datetime):
        return (stamp - start).total_seconds()
    assert isinstance(start, float) and isinstance(stamp, float)  # one file holds one kind
    return stamp - start
