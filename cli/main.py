"""The `stallfree` command line: one subcommand per module in `stallfree.commands`.

Each command module has NAME, HELP, `configure(parser)` and `run(args) -> int`; modules import
heavy extras (torch, z3) inside `run`, so `stallfree --help` needs only the standard library.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from . import __version__

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
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stallfree",
        description="A formally specified reference scheduler for continuous batching with chunked prefill.",
    )
    parser.add_argument("--version", action="version", version=f"stallfree {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"stallfree.commands.{name}")
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.configure(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
