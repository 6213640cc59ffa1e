"""`stallfree import-trace`: convert an engine's step trace, recorded in the engine's own terms, into
trace v2 for `stallfree check-trace` (today: vLLM V1 step traces, see
stallfree.conformance.engines.import_vllm)."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from .args import check_distinct, check_output_file, write_output

NAME = "import-trace"
HELP = "convert an engine's own step trace (vLLM V1 steps) into trace v2 for check-trace"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, metavar="STEPS.jsonl", help="the engine's step trace")
    p.add_argument("--from", dest="source", choices=["vllm-steps"], default="vllm-steps",
                   help="the input's format (default vllm-steps: one line per vLLM V1 scheduler step)")
    p.add_argument("--workload", type=Path, metavar="FILE",
                   help="the requests, [{rid, prompt_len, max_new, ...}] (default: ../workloads/NAME.json)")
    p.add_argument("--config", type=Path, metavar="FILE",
                   help="token_budget, max_seqs, kv_tokens, block_size (default: ../workloads/NAME.config.json)")
    p.add_argument("-o", "--output", type=Path, metavar="OUT.jsonl", help="write the v2 trace here (default: stdout)")


def run(args: argparse.Namespace) -> int:
    from stallfree.conformance.engines.cache_claims import CacheClaims, verify
    from stallfree.conformance.engines.import_vllm import convert, load_config, load_workload, read_capped, read_steps
    from stallfree.conformance.trace.tracefile import TraceError
    from stallfree.conformance.trace.v2 import TraceWriterV2

    beside = args.file.parent.parent / "workloads" / args.file.stem
    workload = args.workload or beside.with_suffix(".json")
    config_path = args.config or beside.with_suffix(".config.json")
    try:
        if args.output is not None:
            check_output_file("--output", args.output)
        check_distinct([("STEPS", args.file), ("--workload", workload), ("--config", config_path)],
                       [("--output", args.output), ("--json", getattr(args, "json", None))])
        requests = load_workload(workload)
        config = load_config(config_path)
        steps = read_steps(read_capped(args.file).splitlines())
    except TraceError as error:
        return fail(f"{args.file}: {error}")
    except (ValueError, OSError) as error:
        text = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        where = getattr(error, "filename", None)
        return fail(f"{where}: {text}" if where else text)
    claims = CacheClaims()
    try:
        converted = list(verify(convert(steps, requests), config.block_size or 1, claims))
    except TraceError as error:
        return fail(f"{args.file}: {error}")
    out = io.StringIO()
    writer = TraceWriterV2(out, config, {"engine": "vllm V1 scheduler", "imported_from": args.file.name,
                                          "cached": claims.as_meta()})
    for step in converted:
        writer.step(step)
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


def fail(message: str) -> int:
    print(f"stallfree import-trace: {message}", file=sys.stderr)
    return 2
