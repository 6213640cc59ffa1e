"""`stallfree import-trace`: convert an engine's step trace, recorded in the engine's own terms, into
trace v2 for `stallfree check-trace`: vLLM V1 step traces (stallfree.conformance.engines.import_vllm)
or any engine's scheduling events (stallfree.conformance.engines.import_events)."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import Any

from .args import check_distinct, check_output_file, write_output

NAME = "import-trace"
HELP = "convert an engine's own step trace (vLLM V1 steps, or scheduling events) into trace v2 for check-trace"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, metavar="STEPS.jsonl", help="the engine's step trace")
    p.add_argument("--from", dest="source", choices=["vllm-steps", "events"], default="vllm-steps",
                   help="the input's format (default vllm-steps: one line per vLLM V1 scheduler step; events: "
                        "one line per scheduling event, any engine, docs/conformance.md)")
    p.add_argument("--workload", type=Path, metavar="FILE",
                   help="vllm-steps: the requests, [{rid, prompt_len, max_new, ...}] (default: ../workloads/NAME.json)")
    p.add_argument("--config", type=Path, metavar="FILE",
                   help="token_budget, max_seqs, kv_tokens, block_size (default: ../workloads/NAME.config.json)")
    p.add_argument("-o", "--output", type=Path, metavar="OUT.jsonl", help="write the v2 trace here (default: stdout)")


def run(args: argparse.Namespace) -> int:
    from stallfree.conformance.engines.cache_claims import CacheClaims, verify
    from stallfree.conformance.engines.import_vllm import load_config
    from stallfree.conformance.trace.tracefile import TraceError
    from stallfree.conformance.trace.v2 import TraceWriterV2

    beside = args.file.parent.parent / "workloads" / args.file.stem
    config_path = args.config or beside.with_suffix(".config.json")
    events = args.source == "events"
    claims = CacheClaims("claimed" if events else "inferred")
    try:
        if args.output is not None:
            check_output_file("--output", args.output)
        workload = None if events else args.workload or beside.with_suffix(".json")
        inputs = [("STEPS", args.file), ("--config", config_path), *([("--workload", workload)] if workload else [])]
        check_distinct(inputs, [("--output", args.output), ("--json", getattr(args, "json", None))])
        config = load_config(config_path)
        steps, ended = read(args.file, workload)
        converted = list(verify(steps, config.block_size or 1, claims))
    except TraceError as error:
        return fail(f"{args.file}: {error}")
    except (ValueError, OSError) as error:
        text = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        where = getattr(error, "filename", None)
        return fail(f"{where}: {text}" if where else text)
    out = io.StringIO()
    engine = "scheduling events" if events else "vllm V1 scheduler"
    writer = TraceWriterV2(out, config, {"engine": engine, "imported_from": args.file.name, "cached": claims.as_meta()})
    for step in converted:
        writer.step(step)
    if ended:
        writer.end()
    print(f"stallfree import-trace: {claims.summary()}", file=sys.stderr)
    if args.output is None:
        sys.stdout.write(out.getvalue())
        return 0
    try:
        write_output("--output", args.output, out.getvalue())
    except ValueError as error:
        return fail(str(error))
    return 0


def read(path: Path, workload: Path | None) -> tuple[list[Any], bool]:
    """The v2 steps of the input and whether the engine's run ended: a vLLM step trace (with its
    workload; always ended) or an event log (without one)."""
    from stallfree.conformance.engines.import_events import read_events
    from stallfree.conformance.engines.import_vllm import convert, load_workload, read_capped, read_steps

    if workload is None:
        return read_events(read_capped(path).splitlines())
    requests = load_workload(workload)
    return list(convert(read_steps(read_capped(path).splitlines()), requests)), True


def fail(message: str) -> int:
    print(f"stallfree import-trace: {message}", file=sys.stderr)
    return 2
