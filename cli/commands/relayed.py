"""The output of `supervised`'s child where the caller's is no file the child can inherit (a caller that
runs `main()` with its output captured in memory, pytest's capsys): the child's descriptors 1 and 2
are pipes, and this process relays what comes through them into the caller's own stream objects, as it
comes and, once the child's group has ended (or been killed), to the last byte written."""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import time
from typing import TextIO

CHUNK = 1 << 16  # bytes read from a pipe at once


class Relay:
    """A pipe for each of `out` and `err`: the child writes (`child`), this process relays (`pump`)."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self._write_ends: list[int] = []
        self._targets: dict[int, tuple[TextIO, codecs.IncrementalDecoder]] = {}  # open read end -> its stream
        for stream in (out, err):
            read, write = os.pipe()
            os.set_blocking(read, False)
            self._write_ends.append(write)
            self._targets[read] = (stream, codecs.getincrementaldecoder("utf-8")(errors="replace"))

    def child(self) -> tuple[TextIO, TextIO]:
        """In the child: descriptors 1 and 2 are the pipes' write ends (C code and processes it starts
        write there too); the text streams on them, flushed at each line."""
        for read in self._targets:
            os.close(read)
        for fd, write in enumerate(self._write_ends, start=1):
            if write != fd:
                os.dup2(write, fd)
                os.close(write)
        out, err = (open(fd, "w", buffering=1, encoding="utf-8", errors="backslashreplace",  # noqa: SIM115
                         closefd=False) for fd in (1, 2))  # buffering=1: flushed at each line
        return out, err

    def parent(self) -> None:
        """In this process, after the fork: the write ends are the child's alone, so its end is an EOF."""
        for write in self._write_ends:
            os.close(write)
        self._write_ends.clear()

    def pump(self, seconds: float) -> bool:
        """Relays what the pipes hold, waiting up to `seconds` for some; whether anything came."""
        if not self._targets:
            time.sleep(seconds)
            return False
        ready, _, _ = select.select(list(self._targets), [], [], seconds)
        for read in ready:
            self._read(read)
        return bool(ready)

    def drain(self, quiet_s: float) -> None:
        """Relays to each pipe's end: once every process that held a write end has ended, all of it; a
        pipe still open after `quiet_s` with nothing written (a process outside the group holds it) is
        left."""
        while self._targets and self.pump(quiet_s):
            pass
        for read in list(self._targets):
            self._close(read)

    def _read(self, read: int) -> None:
        stream, decoder = self._targets[read]
        while True:
            try:
                data = os.read(read, CHUNK)
            except BlockingIOError:
                return
            if not data:
                self._close(read)
                return
            _write(stream, decoder.decode(data))

    def _close(self, read: int) -> None:
        stream, decoder = self._targets.pop(read)
        _write(stream, decoder.decode(b"", final=True))
        os.close(read)


def _write(stream: TextIO, text: str) -> None:
    if text:
        with contextlib.suppress(OSError, ValueError):  # the caller's stream closed: the rest is lost there too
            stream.write(text)
            stream.flush()
