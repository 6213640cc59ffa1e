"""What every hostile-input test asserts, in one place: the exit status, one line naming the field and
the value, no traceback, no output file left behind, and a bound on time."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from stallfree.main import main

TESTS = Path(__file__).parent
SECONDS = 20.0  # a refusal or a verdict on a hostile input comes within this, on a loaded 2-core machine


@dataclass(frozen=True)
class Ran:
    status: int
    out: str
    err: str
    seconds: float


def call(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> Ran:
    """main(argv) in this process; argparse's exit counts as the status."""
    capsys.readouterr()
    started = time.monotonic()
    try:
        status = main(list(argv))
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    seconds = time.monotonic() - started
    captured = capsys.readouterr()
    return Ran(status, captured.out, captured.err, seconds)


def spawn(argv: Sequence[str], timeout: float = 60.0, code: str | None = None, **kwargs: object) -> Ran:
    """`stallfree ARGV` (or `python -c CODE ARGV`) in a child process, this folder on its path."""
    started = time.monotonic()
    command = [sys.executable, "-c", code, *argv] if code else [sys.executable, "-m", "stallfree", *argv]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env(), **kwargs)  # type: ignore[call-overload]
    return Ran(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


def env() -> dict[str, str]:
    import os

    paths = [str(TESTS), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def assert_refused(ran: Ran, *named: str, status: int = 2, bound: float = SECONDS) -> None:
    """Exit `status`, the last line of stderr names each of `named`, no traceback, in time."""
    assert ran.status == status, (ran.status, ran.out[-2000:], ran.err[-2000:])
    assert_clean(ran, bound)
    last = ran.err.strip().splitlines()[-1] if ran.err.strip() else ""
    assert last.startswith("stallfree"), ran.err
    for text in named:
        assert text in last, f"{text!r} not in {last!r}"


def assert_clean(ran: Ran, bound: float = SECONDS) -> None:
    assert "Traceback" not in ran.out + ran.err, ran.err[-3000:]
    assert ran.seconds < bound, f"took {ran.seconds:.1f} s"


def assert_not_written(*paths: Path) -> None:
    """Nothing left at `paths`, nor a temporary file beside them."""
    for path in paths:
        assert not path.exists(), path
        assert not list(path.parent.glob(f".{path.name}.*")), list(path.parent.iterdir())
