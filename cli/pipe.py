"""Standard output that a closed pipe cannot end early: `stallfree trace ... | head -1` must still
exit with the verdict's status, not 0 because the reader went away before it was known."""

from __future__ import annotations

import io
import os
from typing import TextIO


class Discard(io.TextIOBase):
    """A stream that keeps nothing: the report for people under `--json -`, which is dropped as it is
    written rather than held whole in memory to the end of the run."""

    def write(self, text: str) -> int:
        return len(text)

    def isatty(self) -> bool:
        return False


class CutPipe(io.TextIOBase):
    """Writes through to `stream` until its reader goes away (EPIPE); from then on each write is
    dropped, and the descriptor is pointed at /dev/null so that the interpreter's own flush at exit
    does not fail either. The command runs on to its verdict; `cut` says the output was lost."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self.cut = False

    def write(self, text: str) -> int:
        if not self.cut:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.cut:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._drop()

    def isatty(self) -> bool:
        return not self.cut and self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding

    def _drop(self) -> None:
        self.cut = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, io.UnsupportedOperation):  # not a real descriptor (a test's capture)
            pass
