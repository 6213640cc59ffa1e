"""What every hostile-input test asserts, in one place: the exit status, one line naming the field and
the value, no traceback, no output file left behind. Nothing here reads the clock: a hang fails the
test through the test runner's limit (pytest-timeout) or the child's, never through a bound on time."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from stallfree.main import main

TESTS = Path(__file__).parent


@dataclass(frozen=True)
class Ran:
    status: int
    out: str
    err: str


def call(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> Ran:
    """main(argv) in this process; argparse's exit counts as the status."""
    capsys.readouterr()
    try:
        status = main(list(argv))
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    captured = capsys.readouterr()
    return Ran(status, captured.out, captured.err)


def spawn(argv: Sequence[str], timeout: float = 60.0, code: str | None = None, **kwargs: object) -> Ran:
    """`stallfree ARGV` (or `python -c CODE ARGV`) in a child process, this folder on its path;
    `timeout` only turns a hang into a failure."""
    command = [sys.executable, "-c", code, *argv] if code else [sys.executable, "-m", "stallfree", *argv]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env(), **kwargs)  # type: ignore[call-overload]
    return Ran(done.returncode, done.stdout, done.stderr)


def env() -> dict[str, str]:
    import os

    paths = [str(TESTS), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def assert_refused(ran: Ran, *named: str, status: int = 2) -> None:
    """Exit `status`, the last line of stderr names each of `named`, no traceback."""
    assert ran.status == status, (ran.status, ran.out[-2000:], ran.err[-2000:])
    assert_clean(ran)
    last = ran.err.strip().splitlines()[-1] if ran.err.strip() else ""
    assert last.startswith("stallfree"), ran.err
    for text in named:
        assert text in last, f"{text!r} not in {last!r}"


def assert_clean(ran: Ran) -> None:
    assert "Traceback" not in ran.out + ran.err, ran.err[-3000:]


def assert_not_written(*paths: Path) -> None:
    """Nothing left at `paths`, nor a temporary file beside them."""
    for path in paths:
        assert not path.exists(), path
        assert not list(path.parent.glob(f".{path.name}.*")), list(path.parent.iterdir())


EVENT_LIMIT_S = 300.0  # only turns a hang into a failure: an event is waited on, never timed


def wait_for(happened: Callable[[], bool], what: str, limit: float = EVENT_LIMIT_S) -> None:
    """Poll until `happened()` is true; fail naming `what` if it has not after `limit` seconds."""
    import time

    deadline = time.monotonic() + limit
    while not happened():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {limit:.0f} s")
        time.sleep(0.05)


def children(pid: int) -> list[int]:
    """The live child processes of `pid` (Linux /proc), none once it is gone."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except FileNotFoundError:
        return []


def maps(pid: int, library: str) -> bool:
    """True once process `pid` has mapped a file whose name contains `library`."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return library in f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False


def interrupted_job(argv: Sequence[str], workers: int) -> tuple[subprocess.Popen[str], list[int]]:
    """Start `stallfree ARGV` as a shell starts a job (its own process group, Ctrl-C's default action),
    wait for its `workers` child processes, and send Ctrl-C to the whole group, as a terminal does;
    returns the process (to `communicate` with) and the workers' ids."""
    import os
    import signal

    def as_from_a_terminal() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.setpgrp()

    proc = subprocess.Popen([sys.executable, "-m", "stallfree", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env(), preexec_fn=as_from_a_terminal)
    wait_for(lambda: len(children(proc.pid)) >= workers or proc.poll() is not None, f"{workers} workers")
    started = children(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)
    return proc, started
