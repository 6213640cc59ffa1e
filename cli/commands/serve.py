"""`stallfree serve`: vLLM's OpenAI-compatible server with stallfree's scheduler making every decision."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

from .. import exits
from .args import STDOUT, add_output_arguments, check_json

NAME = "serve"
HELP = ("vLLM's OpenAI-compatible server with stallfree's reservation or paged scheduler, its monitor judging "
        "every step: stallfree serve --design paged -- MODEL [vLLM options]")
DESIGNS = ("reservation", "paged")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--design", required=True, choices=DESIGNS, help="the scheduler: reservation or paged")
    p.add_argument("--on-violation", choices=("stop", "log"), default="stop",
                   help="a broken rule stops the engine before its plan runs (stop, the default) or is logged")
    p.add_argument("--no-monitor", action="store_true", help="run the scheduler with no monitor (to measure its cost)")
    p.add_argument("vllm_args", nargs=argparse.REMAINDER, help="-- then vLLM's `vllm serve` arguments")
    add_output_arguments(p, "the monitor's verdicts and per-step costs when the server shuts down")


def run(args: argparse.Namespace) -> int:
    vllm_args = list(args.vllm_args)
    if vllm_args[:1] == ["--"]:
        vllm_args = vllm_args[1:]
    if not vllm_args:
        print("stallfree serve: give vLLM's arguments after --, e.g. stallfree serve --design paged -- MODEL",
              file=sys.stderr)
        return exits.USAGE
    if importlib.util.find_spec("vllm") is None:
        print("stallfree serve: vLLM is not installed in this Python (scripts/vllm-venv.sh sets up .venv-vllm)",
              file=sys.stderr)
        return exits.USAGE
    from stallfree.serving.launch import server_args
    from stallfree.serving.mapping import Unmapped

    options: dict[str, object] = {"on_violation": args.on_violation, "monitor": not args.no_monitor}
    if args.json == STDOUT:
        print("stallfree serve: --json -: the server's stdout is its log; give a file", file=sys.stderr)
        return exits.USAGE
    check_json(args)
    if args.json:
        options["report"] = os.path.abspath(args.json)
    try:
        argv, notes = server_args(vllm_args, args.design, options)
    except Unmapped as error:
        print(f"stallfree serve: {error}", file=sys.stderr)
        return exits.USAGE
    except SystemExit as error:  # vLLM's parser refused an argument (its message is on stderr)
        print(f"stallfree serve: vLLM's parser refused the arguments (status {error.code})", file=sys.stderr)
        return exits.USAGE
    if not args.quiet:
        monitor = "unmonitored" if args.no_monitor else f"monitored (on a violation: {args.on_violation})"
        print(f"stallfree serve: vLLM with stallfree's {args.design} scheduler, {monitor}; "
              + "; ".join(notes or ["every option maps"]), file=sys.stderr)
        print("stallfree serve: vllm serve " + " ".join(json.dumps(a) if " " in a else a for a in argv),
              file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "stallfree.serving.server_main", *argv])
    return exits.CRASHED  # not reached: execv replaces this process
