"""`stallfree budget`: turn token budgets into milliseconds for a model on GPUs (the floor chain)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from stallfree.costs import (
    DTYPES,
    GPUS,
    MEMORY_SHARE,
    MODELS,
    MODES,
    Deployment,
    FirstToken,
    Roofline,
    bytes_per_value,
    first_token,
    full_step,
    gpu,
    model,
)
from stallfree.costs.model import KV_TENSORS

from .. import exits
from .args import (
    add_output_arguments,
    check_json,
    check_output_file,
    non_negative_int,
    path_error,
    positive_int,
    write_json,
)

NAME = "budget"
HELP = "turn token budgets into step milliseconds, the decode floor and steps to a long prompt's first token"

MS = 1e3
DEFAULT_BUDGETS = (512, 2048, 8192)
# The contract's example: a 32K-token prompt arriving while 64 streams decode.
DEFAULT_PROMPT_LEN = 32_768
DEFAULT_DECODES = 64
DEFAULT_DECODE_CONTEXT = 1_024
MAX_CHAIN_STEPS = 1_000_000  # steps walked to a first token: a chain longer than this is a typo, not a plan
MAX_BUDGETS = 64


def budget_list(text: str) -> list[int]:
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > MAX_BUDGETS:
        raise argparse.ArgumentTypeError(f"--budgets: {len(parts)} budgets; at most {MAX_BUDGETS}")
    values = []
    for part in parts:
        try:
            values.append(positive_int(part))
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"--budgets {text[:80]!r}: budget {part[:40]!r}: {error}") from None
    return values


def add_deployment_arguments(p: argparse.ArgumentParser) -> None:
    """--model, --gpu, --tp, --dtype, --kv-dtype, --mode: shared with `stallfree simulate`."""
    p.add_argument("--model", default="llama-3.3-70b", choices=sorted(MODELS),
                   help="model preset (default llama-3.3-70b)")
    p.add_argument("--gpu", default="h100-sxm", choices=sorted(GPUS), help="GPU preset (default h100-sxm)")
    p.add_argument("--tp", type=positive_int, default=4, help="tensor-parallel GPUs (default 4)")
    p.add_argument("--dtype", default="fp8", choices=DTYPES, help="weight dtype (default fp8)")
    p.add_argument("--kv-dtype", default="bf16", choices=DTYPES, help="KV-cache and attention dtype (default bf16)")


def deployment_from(args: argparse.Namespace) -> Deployment:
    return Deployment(model(args.model), gpu(args.gpu), args.tp, args.dtype, args.kv_dtype)


def configure(p: argparse.ArgumentParser) -> None:
    add_deployment_arguments(p)
    p.add_argument("--mode", default="floor", choices=MODES,
                   help="floor: weights only, the contract's chain; full: adds attention and KV traffic")
    p.add_argument("--budgets", type=budget_list, default=list(DEFAULT_BUDGETS), metavar="B,B,...",
                   help="token budgets (default 512,2048,8192)")
    p.add_argument("--prompt-len", type=positive_int, default=DEFAULT_PROMPT_LEN,
                   help=f"the long prompt's tokens (default {DEFAULT_PROMPT_LEN})")
    p.add_argument("--decodes", type=non_negative_int, default=DEFAULT_DECODES,
                   help=f"streams decoding when it arrives (default {DEFAULT_DECODES})")
    p.add_argument("--decode-context", type=positive_int, default=DEFAULT_DECODE_CONTEXT,
                   help=f"their cached positions, priced in full mode only (default {DEFAULT_DECODE_CONTEXT})")
    p.add_argument("--plot", type=Path, default=None, metavar="FILE.png",
                   help="draw the trade-off: the long prompt's time to first token and the stream gap against B")
    add_output_arguments(p, "the table")


def sci(value: float) -> str:
    """1.41e+11 -> 1.41e11."""
    mantissa, _, exponent = f"{value:.3g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def giga(value: float) -> str:
    """70550000000.0 -> 70.55e9: parameters and bytes in the contract's notation."""
    return f"{value / 1e9:g}e9"


def header(d: Deployment, roofline: Roofline) -> list[str]:
    m, g = d.model, d.gpu
    lines = [
        f"{d.describe()}; {roofline.mode} mode, at 100% of peak",
        f"  prefill FLOPs per token = 2 x {giga(m.num_params)} = {sci(m.flops_per_token)}; "
        f"peak = {d.tp} x {g.flops(d.dtype) / 1e12:,.0f} TFLOP/s = {sci(d.peak_flops)} FLOP/s",
        f"  decode-only step floor = {giga(d.weight_bytes)} B / {d.tp} / {sci(g.mem_bandwidth)} B/s "
        f"= {roofline.decode_floor_seconds * MS:.1f} ms",
    ]
    if roofline.mode == "full":
        lines.append(
            f"  attention FLOPs per (query, cached position) = 4 x {m.num_layers} layers x {m.num_heads} heads x "
            f"{m.head_dim} = {sci(m.attention_flops_per_pair)} at {sci(d.attention_flops)} FLOP/s ({d.kv_dtype}); "
            f"KV {d.kv_bytes_per_token:,} B per token"
        )
    width = bytes_per_value("kv_dtype", d.kv_dtype)
    lines.append(f"  KV per token = {KV_TENSORS} (key, value) x {m.num_layers} layers x {m.num_kv_heads} KV heads x "
                 f"{m.head_dim} x {width} B ({d.kv_dtype}) = {d.kv_bytes_per_token:,} B")
    try:
        lines.append(f"  KV capacity: {d.kv_tokens:,} tokens")
        lines.append(f"    = ({d.tp} x {giga(g.mem_bytes)} B x {MEMORY_SHARE:.0%} - {giga(d.weight_bytes)} B of "
                     f"weights) / {d.kv_bytes_per_token:,} B per token")
    except ValueError as error:
        lines.append(f"  KV capacity: none ({error})")
    return lines


COLUMNS = ("budget", "step ms", "tokens/s", "prompt/step", "steps to 1st token", "1st token ms", "stream gap ms")


def table_row(budget: int, step_seconds: float, chain: FirstToken | None) -> str:
    cells = [f"{budget:,}", f"{step_seconds * MS:.1f}", f"{budget / step_seconds:,.0f}"]
    if chain is None:
        cells += ["-", "never", "-", "-"]
    else:
        cells += [f"{budget - chain.num_decodes:,}", f"{chain.num_steps}", f"{chain.seconds * MS:.1f}",
                  f"{chain.worst_step_seconds * MS:.1f}"]
    return "  ".join(cell.rjust(len(col)) for cell, col in zip(cells, COLUMNS, strict=True))


def run(args: argparse.Namespace) -> int:
    try:
        deployment = deployment_from(args)
        roofline = Roofline(deployment, args.mode)
        for budget in args.budgets:
            if budget > args.decodes and -(-args.prompt_len // (budget - args.decodes)) > MAX_CHAIN_STEPS:
                raise ValueError(f"--prompt-len {args.prompt_len}: at budget {budget} beside {args.decodes} decodes "
                                 f"its first token is more than {MAX_CHAIN_STEPS:,} steps away; give a shorter prompt "
                                 "or a larger budget")
        check_json(args)
        if args.plot is not None:
            check_output_file("--plot", args.plot)
            plotting()
    except ValueError as error:
        print(f"stallfree budget: {error}", file=sys.stderr)
        return exits.USAGE
    for line in header(deployment, roofline):
        print(line)
    print()
    print(f"a {args.prompt_len:,}-token prompt arriving beside {args.decodes} running decodes "
          "(a step: every decode, then a chunk of what is left):")
    print("  ".join(COLUMNS))
    rows = []
    for budget in args.budgets:
        chain = None
        if budget > args.decodes:
            chain = first_token(roofline, budget, args.prompt_len, args.decodes, args.decode_context)
        step_seconds = full_step(roofline, budget)
        print(table_row(budget, step_seconds, chain))
        rows.append({"budget": budget, "step_ms": step_seconds * MS, "tokens_per_second": budget / step_seconds,
                     "steps_to_first_token": None if chain is None else chain.num_steps,
                     "first_token_ms": None if chain is None else chain.seconds * MS,
                     "stream_gap_ms": None if chain is None else chain.worst_step_seconds * MS})
    try:
        if args.plot is not None:
            print(f"plot: {draw(args, deployment, roofline, rows)}")
        write_json(args, {"deployment": deployment.describe(), "mode": roofline.mode, "prompt_len": args.prompt_len,
                          "decodes": args.decodes, "decode_context": args.decode_context, "rows": rows})
    except ValueError as error:
        print(f"stallfree budget: {error}", file=sys.stderr)
        return exits.USAGE
    return exits.HOLDS


def plotting() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValueError("--plot needs matplotlib: pip install 'stallfree[plot]'") from None


def draw(args: argparse.Namespace, deployment: Deployment, roofline: Roofline, rows: list[dict[str, Any]]) -> Path:
    from stallfree.view.budget_curve import plot_budget

    title = (f"{deployment.describe()}, {roofline.mode} mode:\na {args.prompt_len:,}-token prompt arriving beside "
             f"{args.decodes} decoding streams")
    try:
        return plot_budget(rows, title, args.plot)
    except OSError as error:
        raise path_error("--plot", args.plot, error) from None
