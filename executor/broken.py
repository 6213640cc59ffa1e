"""Deliberately broken executors, one per real-path rule: the negative controls of the checks in
`checks.py`. Each alters one step of `Executor` and names the rule it breaks in `breaks`; the
scheduler driving it is correct, so only the real path can catch it."""

from __future__ import annotations

from .executor import Executor
from .stream import Stream


class LeakOnFinish(Executor):
    """Never returns a finished request's KV slots to the allocator."""

    breaks = "KV"

    def finish(self, stream: Stream) -> None:
        del self.streams[stream.rid]
        self.done[stream.rid] = stream
        self.ledger.release(stream.rid)


class RewriteLastPosition(Executor):
    """Each later chunk writes its keys and values one slot early, over the previous chunk's last."""

    breaks = "PREFILL-ONCE"

    def write_slots(self, stream: Stream, start: int, n: int) -> list[int]:
        shift = 1 if 0 < start < stream.prompt_len else 0
        return stream.slots[start - shift:start + n - shift]


class ReadPastWritten(Executor):
    """Lets each query see one slot past its own position: memory not yet written (NaN)."""

    breaks = "PREFILL-ONCE"

    def context(self, stream: Stream, end: int) -> list[int]:
        return stream.slots[:end + 1]


class FirstTokenFromFirstRow(Executor):
    """Takes a prompt's first token from the first row of the completing chunk, not its last."""

    breaks = "FIRST-TOKEN"

    def emit_row(self, rows: range) -> int:
        return rows[0]


BROKEN: dict[str, type[Executor]] = {
    cls.__name__: cls for cls in (LeakOnFinish, RewriteLastPosition, ReadPastWritten, FirstTokenFromFirstRow)
}
