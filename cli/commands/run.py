"""`stallfree run`: run a workload on the executor (a Llama-architecture model, tensor parallel,
FP8), checking the rules on the real step path, and print steps, latencies, verdicts and the
equivalence check against an unbatched one-rank run."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from stallfree.spec import Config, FieldTypeError, InvalidField, Workload

from .. import exits
from .args import (
    add_output_arguments,
    check_json,
    load_scheduler,
    positive_float,
    positive_int,
    read_workload,
    rule_list,
    seed,
    shows_progress,
    write_json,
)

if TYPE_CHECKING:  # torch stays out of `stallfree --help`
    from stallfree.executor.job import Job
    from stallfree.executor.runspec import RunSpec

NAME = "run"
HELP = "run a workload on the tensor-parallel FP8 executor; check the rules on the real step path"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="tiny", help="tiny, wide, llama-3.1-8b, llama-3.3-70b (default tiny)")
    p.add_argument("--layers", type=positive_int, default=None, help="use only this many layers (for timing)")
    p.add_argument("--checkpoint", type=Path, default=None, metavar="DIR",
                   help="a Llama checkpoint folder (config.json, *.safetensors) instead of random weights")
    p.add_argument("--tp", type=positive_int, default=4, help="tensor-parallel ranks: 1, 2, 4 or 8 (default 4)")
    p.add_argument("--dtype", default="fp8", choices=("fp8", "bf16", "fp32"), help="matmul weights (default fp8)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="default cpu (gloo); cuda uses nccl")
    p.add_argument("--workload", type=Path, default=None, metavar="FILE", help="a JSON workload (see `trace`)")
    p.add_argument("--budget", type=positive_int, default=None, help="token budget B (default 64)")
    p.add_argument("--max-seqs", type=positive_int, default=None, help="slots S (default 8)")
    p.add_argument("--kv", type=positive_int, default=None, help="KV capacity K in tokens (default 2048)")
    p.add_argument("--scheduler", default="stallfree.reference:Scheduler", metavar="MODULE:FACTORY",
                   help="any scheduler speaking the plain protocol (default: the reference)")
    p.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID",
                   help="rules the monitor checks before each plan runs (default all)")
    p.add_argument("--seed", type=seed, default=0, help="weights and prompts (default 0)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 for greedy (default), else seeded sampling")
    p.add_argument("--no-equivalence", action="store_true", help="skip the unbatched one-rank comparison")
    p.add_argument("--timeout", type=positive_float, default=600.0, help="stop every rank after this many seconds")
    add_output_arguments(p, "the run")


def workload_from(args: argparse.Namespace) -> Workload:
    from stallfree.executor.workloads import long_prompt_amid_decodes

    workload = read_workload(args.workload) if args.workload else long_prompt_amid_decodes()
    c = workload.config
    config = Config(args.budget or c.token_budget, args.max_seqs or c.max_seqs, args.kv or c.kv_tokens)
    return replace(workload, config=config)


def run(args: argparse.Namespace) -> int:
    try:
        from stallfree.executor.job import Job
        from stallfree.executor.runspec import RunSpec
    except ImportError as error:
        print(f"stallfree run: needs the executor extra (pip install 'stallfree[executor]'): {error}", file=sys.stderr)
        return exits.USAGE
    try:
        workload = workload_from(args)
        load_scheduler(args.scheduler)
        check_json(args)
        if args.temperature < 0:
            raise InvalidField(f"--temperature must be >= 0, got {args.temperature}")
        job = Job(workload, args.scheduler, tuple(args.rules) if args.rules else None,
                  keep_logits=not args.no_equivalence, temperature=args.temperature, label="run")
        spec = RunSpec((job,), args.model, args.layers, args.dtype, args.tp, args.device, args.seed,
                       str(args.checkpoint) if args.checkpoint else None)
    except (InvalidField, FieldTypeError, OSError, ValueError, ImportError, AttributeError) as error:
        print(f"stallfree run: {error}", file=sys.stderr)
        return exits.USAGE
    return execute(spec, job, args)


def execute(spec: RunSpec, job: Job, args: argparse.Namespace) -> int:
    from stallfree.executor.equivalence import compare
    from stallfree.executor.launch import RankFailure, launch
    from stallfree.executor.report import as_json, judgements, request_table, step_table, verdicts
    from stallfree.spec.verdict import as_json as verdicts_json

    cfg = job.workload.config
    model = spec.model_config()
    print(f"model {model.name} ({model.num_layers} layers), tp {spec.tp}, {spec.dtype} on {spec.device}; "
          f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}; "
          f"scheduler {args.scheduler}", flush=True)
    show = shows_progress(args)
    if show:
        print(f"launching {spec.tp} rank(s) ...", file=sys.stderr, flush=True)
    try:
        outcome = launch(spec, timeout_s=args.timeout)
    except (RankFailure, TimeoutError) as error:  # a rank crashed or hung: no verdict past it
        print(f"stallfree run: {error}", file=sys.stderr)
        return exits.CRASHED
    result = outcome.results[0]
    print("\n".join(step_table(result, cfg.token_budget)))
    print()
    print("\n".join(request_table(result)))
    if result.refused:
        print(f"refused by add() (rule NEVER-FIT: prompt_len + max_new > kv_tokens, or invalid): {result.refused}")
    print()
    print("\n".join(verdicts(result, job.monitor_rules)))
    equivalence = None
    if job.keep_logits and result.ok:
        if show:
            print("checking equivalence against an unbatched one-rank run ...", file=sys.stderr, flush=True)
        equivalence = compare(spec, result)
        print(equivalence.summary())
    try:
        sections, unlisted = judgements(result, job.monitor_rules)
        data = as_json(result, equivalence)
        data["rules"] = {where: verdicts_json(judged) for where, judged in sections.items()}
        data["rules"]["unlisted"] = verdicts_json(unlisted)
        write_json(args, data)
    except ValueError as error:  # checked before the run, yet the write failed
        print(f"stallfree run: {error}", file=sys.stderr)
        return exits.USAGE
    failed = not result.ok or (equivalence is not None and not equivalence.ok)
    return exits.BROKEN if failed else exits.HOLDS
