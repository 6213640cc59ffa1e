"""The `stallfree` command line: one subcommand per module in `stallfree.commands`.

Each command module has NAME, HELP, `configure(parser)` and `run(args) -> int`; modules import
heavy extras (torch, z3) inside `run`, so `stallfree --help` needs only the standard library.
Every command exits with the statuses of `exits` (listed in each --help); whatever escapes a command
is one line on stderr and status 3, never a traceback read as a broken rule.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

from . import __version__, dropped, exits
from .commands.args import STDOUT
from .pipe import CutPipe, Discard

COMMANDS = (
    "trace",
    "run",
    "conform",
    "check_trace",
    "import_trace",
    "budget",
    "simulate",
    "campaign",
    "prove",
    "exercise",
    "serve",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stallfree",
        description="A formally specified reference scheduler for continuous batching with chunked prefill.",
        epilog=exits.EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"stallfree {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"stallfree.commands.{name}")
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP, epilog=exits.EPILOG)
        module.configure(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _command(argv)
    except KeyboardInterrupt:  # a second Ctrl-C (or Z3's echo of the first) while the first was reported
        return exits.INTERRUPTED


def _command(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return exits.USAGE
    # A reader that goes away (`| head -1`) drops the rest of the output, never the verdict's status.
    out = CutPipe(sys.stdout)
    args.stdout = out
    # --json -: the JSON is all that goes to stdout; the report for people is dropped.
    quiet = contextlib.redirect_stdout(Discard()) if getattr(args, "json", None) == STDOUT else None
    guard = no_exit() if args.command in IN_PROCESS else contextlib.nullcontext()
    try:
        with dropped.kept(), terminate_as_interrupt(), contextlib.redirect_stdout(out), \
                quiet or contextlib.nullcontext(), guard:
            return int(args.run(args))
    except (KeyboardInterrupt, SystemExit, Exception) as error:
        return ended(args.command, error)


def ended(command: str, error: BaseException) -> int:
    """The status of a command that raised `error`, its one line printed (`prove`'s supervised child
    ends the same way); anything else is raised again."""
    if isinstance(error, KeyboardInterrupt) or (isinstance(error, Exception) and exits.interrupted(error)):
        print(f"stallfree {command}: interrupted", file=sys.stderr)
        _forget_the_interrupt()
        return exits.INTERRUPTED
    if isinstance(error, BrokenPipeError):  # a pipe other than stdout: the verdict may not have reached anyone
        print(f"stallfree {command}: an output pipe closed before the verdict was written", file=sys.stderr)
        return exits.CRASHED
    if isinstance(error, SystemExit):  # commands return their status: this came from the code they ran
        call = error.call if isinstance(error, ProcessExit) else f"sys.exit({error.code!r})"
        print(f"stallfree {command}: the checked code called {call} before a verdict", file=sys.stderr)
        return exits.CRASHED
    if not isinstance(error, Exception):
        raise error
    from stallfree.testing.campaign import where_raised  # a bug, in stallfree or in what it ran

    print(f"stallfree {command}: internal error: {type(error).__name__}: {str(error)[:300]} "
          f"(raised at {where_raised(error)})", file=sys.stderr)
    return exits.CRASHED


def _forget_the_interrupt() -> None:
    """Ctrl-C that lands inside an `exec` of a string (a dataclass being made during an import, say)
    leaves CPython marked as ended by an unhandled KeyboardInterrupt, even though it was handled here:
    the process would then kill itself with SIGINT at exit, status -2, not 130. An exec of a string
    that raises nothing clears that mark."""
    exec("None")  # a constant: it only resets the mark


# Commands that run the checked scheduler in this process, and start no process that must end with
# os._exit (the campaign's and the executor's forked workers do; conform's worker is a fresh interpreter).
IN_PROCESS = {"trace", "simulate", "prove", "check-trace", "budget"}


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (what `kill`, a CI runner or a supervisor sends) ends a command as Ctrl-C does: its
    temporary files removed, its workers stopped, `interrupted` and status 130. A handler the caller
    installed is left alone."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


class ProcessExit(SystemExit):
    """The checked code called os._exit: it may not end stallfree with a status that reads as a verdict."""

    def __init__(self, code: object) -> None:
        super().__init__(code)
        self.call = f"os._exit({code!r})"


@contextlib.contextmanager
def no_exit() -> Iterator[None]:
    real = os._exit

    def refused(code: int) -> None:
        raise ProcessExit(code)

    os._exit = refused  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


if __name__ == "__main__":
    sys.exit(main())
