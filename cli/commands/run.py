"""`stallfree run`: run a workload on the executor (a Llama-architecture model, tensor parallel, in
fp32, bf16 or FP8), checking the rules on the real step path, then the model's outputs: exactness
against an unbatched one-rank fp32 run (fp32 runs), a real checkpoint against an independent numpy
forward pass, request isolation (bit for bit, every dtype), an FP8 run's agreement with each request
run alone in FP8 (within e4m3 rounding), and as measurements bf16/FP8 accuracy.
`--model smollm2` runs a real checkpoint on real prompts and prints the text as it is generated."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stallfree.conformance.isolation.remote import CallHung
from stallfree.spec import Cancel, Config, FieldTypeError, InvalidField, Workload
from stallfree.spec.capability import Unsupported, supports
from stallfree.spec.verdict import CRASH, TIMEOUT

from .. import exits
from .args import (
    SCHEDULERS,
    FactoryError,
    add_output_arguments,
    check_json,
    positive_float,
    positive_int,
    read_workload,
    rule_list,
    seed,
    shows_progress,
    write_json,
)

if TYPE_CHECKING:  # torch stays out of `stallfree --help`
    from stallfree.executor.engine.job import Job, JobResult
    from stallfree.executor.models.tokenizer import TextCodec
    from stallfree.executor.runs.runspec import RunSpec

NAME = "run"
HELP = "run a workload on the tensor-parallel executor; check the rules on the real step path and its outputs"
DEFAULT_TP = 4  # SmolLM2's 9 query and 3 KV heads are zero-padded to 12 and 4 for it (executor/models/padding.py)
FAULTS = ("raise", "exit", "stop", "hang")  # --fault KIND: what the rank does at that step (worker.crash_if_due)
CHAT_MAX_NEW = 32  # tokens per chat answer
CHAT_CONFIG = Config(16, 8, 2048)  # budget 16: prompts of ~40 tokens are prefilled in chunks while others decode


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="tiny",
                   help="smollm2 (a real checkpoint, real prompts), tiny, wide, llama-3.1-8b, llama-3.3-70b "
                        "(random weights; default tiny)")
    p.add_argument("--prompt", action="append", default=None, metavar="TEXT",
                   help="a user prompt for a real model (repeatable; default: the shipped prompt set)")
    p.add_argument("--max-new", type=positive_int, default=CHAT_MAX_NEW, help="tokens per answer (real model)")
    p.add_argument("--layers", type=positive_int, default=None, help="use only this many layers (for timing)")
    p.add_argument("--checkpoint", type=Path, default=None, metavar="DIR",
                   help="a Llama checkpoint folder (config.json, *.safetensors) instead of random weights")
    p.add_argument("--tp", type=positive_int, default=None,
                   help="tensor-parallel ranks: 1, 2, 4 or 8 (default 4) for the Llama shapes; 1, 2, 3 or 4 for "
                        "smollm2 (its heads zero-padded at 2 and 4); any count that divides the FFN and vocab and "
                        "the heads, padded or not")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "bf16", "fp8"),
                   help="decoder matmul weights (default fp32, where exactness is judged)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="default cpu (gloo); cuda uses nccl")
    p.add_argument("--workload", type=Path, default=None, metavar="FILE", help="a JSON workload (see `trace`)")
    p.add_argument("--budget", type=positive_int, default=None, help="token budget B (default 64; 16 for chat)")
    p.add_argument("--max-seqs", type=positive_int, default=None, help="slots S (default 8)")
    p.add_argument("--kv", type=positive_int, default=None, help="KV capacity K in tokens (default 2048)")
    p.add_argument("--scheduler", default="stallfree.reference:Scheduler", metavar="MODULE:FACTORY",
                   help="any scheduler speaking the plain protocol, or reference, paged or prefix "
                        "(default: the reference)")
    p.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID",
                   help="rules the monitor checks before each plan runs (default all)")
    p.add_argument("--seed", type=seed, default=0, help="random weights, prompts and sampling (default 0)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="0 for greedy (default), else seeded sampling (replayed by the exactness check)")
    p.add_argument("--stop-token", type=stop_token, default=None, metavar="ID|none",
                   help="a request that samples this token id stops on it (default: a real model's end token, "
                        "none for random weights; none: every request runs to max_new)")
    p.add_argument("--cancel", type=cancel_of, action="append", default=[], metavar="RID@STEP",
                   help="cancel request RID before step STEP is planned (repeatable)")
    p.add_argument("--fault", type=fault_at, default=None, metavar="KIND:RANK@STEP",
                   help="inject a fault: rank RANK, at step STEP, raises, exits, stops (SIGSTOP) or hangs inside "
                        "the step (raise, exit, stop, hang); the launcher must name that rank")
    p.add_argument("--no-equivalence", action="store_true",
                   help="skip the output checks (exactness, isolation, accuracy)")
    p.add_argument("--timeout", type=positive_float, default=600.0, help="stop every rank after this many seconds")
    p.add_argument("--call-timeout", type=positive_float, default=60.0, metavar="SECONDS",
                   help="seconds for each call to a user's scheduler, hosted in its own process (default 60); "
                        "one that does not return is exit 3 naming the call")
    add_output_arguments(p, "the run")


NO_STOP = -1  # `--stop-token none`: no stop token, even on a real model


def stop_token(text: str) -> int:
    """`--stop-token`: a token id (an int >= 0) or `none`."""
    if text.strip().lower() == "none":
        return NO_STOP
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a token id (an int >= 0) or none, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a token id (an int >= 0) or none, got {text!r}")
    return value


def cancel_at(text: str) -> tuple[int, int]:
    """`N@STEP` (`--cancel RID@STEP`, `--fault`'s RANK@STEP): two ints >= 0."""
    rid, at, step = text.partition("@")
    try:
        pair = int(rid), int(step)
    except ValueError:
        pair = (-1, -1)
    if not at or min(pair) < 0:
        raise argparse.ArgumentTypeError(f"expected RID@STEP (two ints >= 0, e.g. 2@10), got {text!r}")
    return pair


def cancel_of(text: str) -> Cancel:
    """`--cancel RID@STEP`: cancel RID before step STEP is planned."""
    rid, step = cancel_at(text)
    return Cancel(rid, step)


def fault_at(text: str) -> tuple[int, int, str]:
    """`--fault KIND:RANK@STEP`: KIND one of FAULTS, two ints >= 0 (as Job.crash: rank, step, kind)."""
    kind, colon, at = text.partition(":")
    try:
        rank, step = cancel_at(at)
    except argparse.ArgumentTypeError:
        rank = step = -1
    if not colon or kind not in FAULTS or rank < 0:
        raise argparse.ArgumentTypeError(f"expected KIND:RANK@STEP with KIND one of {', '.join(FAULTS)} "
                                         f"(e.g. hang:2@5), got {text!r}")
    return rank, step, kind


def chosen_stop(args: argparse.Namespace, codec: TextCodec | None, vocab: int) -> int | None:
    """The stop token of the run: --stop-token, else a real model's end token; None for no stop."""
    if args.stop_token == NO_STOP:
        return None
    if args.stop_token is None:
        return codec.end_token if codec is not None else None
    if args.stop_token >= vocab:
        raise InvalidField(f"--stop-token {args.stop_token}: the model's vocabulary has {vocab} tokens "
                           f"(0..{vocab - 1})")
    return int(args.stop_token)


def check_cancels(cancels: list[Cancel], workload: Workload) -> None:
    """Each `--cancel RID@STEP` names a request of the workload: a cancel of a rid the run never adds
    could only be refused, so it is a mistake in the command line, not a fact about the scheduler."""
    rids = {a.rid for a in workload.requests}
    for c in cancels:
        if c.rid not in rids:
            shown = ", ".join(map(str, sorted(rids)[:10])) + (", ..." if len(rids) > 10 else "")
            raise InvalidField(f"--cancel {c.rid}@{c.step}: rid {c.rid} is not a request of the workload "
                               f"(rids: {shown})")


def check_pending(workload: Workload, path: object) -> None:
    """The executor runs each step whole, so a workload file's cancel marked pending (offered while a
    plan is pending) cannot happen on the real path: refused by name before anything is launched."""
    for c in workload.cancels:
        if c.pending:
            raise InvalidField(f"--workload {path}: cancel of rid {c.rid} at step {c.step}: pending=true needs "
                               "the monitor's own step; the executor runs each step whole")


def workload_from(args: argparse.Namespace, codec: TextCodec | None) -> tuple[Workload, Any]:
    """The workload, and for a real model the chat requests it was made from (None otherwise)."""
    from stallfree.executor.runs.prompts import PROMPTS, chat_requests
    from stallfree.executor.runs.workloads import long_prompt_amid_decodes

    chat = None
    if codec is not None and args.workload is None:
        chat = chat_requests(codec, tuple(args.prompt or PROMPTS), args.max_new, CHAT_CONFIG)
        workload = chat.workload
    elif args.prompt:
        raise InvalidField("--prompt needs a real model (--model smollm2) and no --workload")
    else:
        workload = read_workload(args.workload) if args.workload else long_prompt_amid_decodes()
    c = workload.config
    config = Config(args.budget or c.token_budget, args.max_seqs or c.max_seqs, args.kv or c.kv_tokens)
    return replace(workload, config=config), chat


def run(args: argparse.Namespace) -> int:
    try:
        from stallfree.executor.engine.job import Job
        from stallfree.executor.models.checkpoints import GGUF_MODELS
        from stallfree.executor.models.tokenizer import text_codec
        from stallfree.executor.runs.runspec import MODEL_NAMES, RunSpec
    except ImportError as error:
        print(f"stallfree run: needs the executor extra (pip install 'stallfree[executor]'): {error}", file=sys.stderr)
        return exits.USAGE
    try:
        if not math.isfinite(args.temperature) or args.temperature < 0:
            raise InvalidField(f"--temperature must be a finite number >= 0, got {args.temperature}")
        if args.model not in MODEL_NAMES:
            raise InvalidField(f"--model must be one of {', '.join(MODEL_NAMES)}, got {args.model!r}")
        tp = args.tp or DEFAULT_TP
        if args.fault is not None and args.fault[0] >= tp:
            raise InvalidField(f"--fault {args.fault[2]}:{args.fault[0]}@{args.fault[1]}: rank {args.fault[0]} "
                               f"is not one of the {tp} rank(s)")
        probe = RunSpec((), args.model, args.layers, args.dtype, tp, args.device, args.seed,
                        str(args.checkpoint) if args.checkpoint else None)
        codec = text_codec(probe.gguf) if args.model in GGUF_MODELS and args.checkpoint is None else None
        workload, chat = workload_from(args, codec)
        check_cancels(args.cancel, workload)
        check_pending(workload, args.workload)
        codec = codec if chat is not None else None  # a --workload's prompts are drawn ids, not text
        stop = chosen_stop(args, codec, probe.model_config().vocab)
        pool = check_scheduler(args, workload.config, stop, workload.cancels)
        check_json(args)
        job = Job(workload, SCHEDULERS.get(args.scheduler, args.scheduler), tuple(args.rules) if args.rules else None,
                  keep_logits=not args.no_equivalence, temperature=args.temperature,
                  prompts=chat.prompts if chat else (), label="run", stream=codec is not None,
                  stop_token=stop, cancels=tuple(args.cancel), crash=args.fault, call_timeout=args.call_timeout)
        spec = replace(probe, jobs=(job,))
    except (InvalidField, FieldTypeError, FactoryError, OSError, ValueError, ImportError, AttributeError) as error:
        print(f"stallfree run: {error}", file=sys.stderr)
        return exits.USAGE
    except CallHung as error:  # the hosted factory, or reading its pool, did not answer
        print(f"stallfree run: {args.scheduler} did not answer: {error}", file=sys.stderr)
        return exits.CRASHED
    return execute(spec, job, args, codec, chat, pool)


def check_scheduler(args: argparse.Namespace, c: Config, stop: int | None,
                    cancels: tuple[Cancel, ...] = ()) -> tuple[int, int] | None:
    """Builds one scheduler of --scheduler (a user's hosted in its own process, as the run's rank 0
    hosts it: its code never runs in this process) and checks that the executor can run its design
    with the workload's stops and cancels (`cancels`: the workload file's own); the pool a preempting
    design declares (block_size,
    watermark), else None."""
    from stallfree.spec import registry

    from .hosting import close, load_judged

    factory, design = load_judged(args.scheduler, args.scheduler, args.call_timeout, "--call-timeout")
    try:
        scheduler = factory(token_budget=c.token_budget, max_seqs=c.max_seqs, kv_tokens=c.kv_tokens)
        contract = registry.contract(design)
        if not contract.executor:  # a design whose real path the executor does not build
            raise InvalidField(f"--scheduler {args.scheduler}: the executor runs the reservation, paged and "
                               f"prefix designs; the real path of design {contract.name!r} is not built")
        needs = ({"stop"} if stop is not None else set()) | ({"cancel"} if args.cancel or cancels else set())
        lacking = sorted(needs - supports(scheduler))
        if lacking:
            cancel_flag = "--cancel" if args.cancel else f"--workload {args.workload}'s cancels"
            flag = {"stop": "--stop-token (use --stop-token none)", "cancel": cancel_flag}[lacking[0]]
            raise InvalidField(f"{flag}: {Unsupported(lacking[0], scheduler).args[0]}")
        if contract.bound is None:  # only a design that preempts has a pool of its own
            return None
        block_size, watermark = scheduler.block_size, scheduler.watermark
        if type(block_size) is not int or type(watermark) is not int or block_size < 1:
            return None  # no pool to widen: the run's monitor names what it declares (PROTOCOL)
        return block_size, watermark
    finally:
        close(factory)


def execute(spec: RunSpec, job: Job, args: argparse.Namespace, codec: TextCodec | None, chat: Any,
            pool: tuple[int, int] | None = None) -> int:
    from stallfree.executor.runs.report import describe_run, verdicts
    from stallfree.executor.runs.text import TextStream

    cfg = job.workload.config
    model = spec.model_config()
    run_info = describe_run(spec, job)
    print(f"model {model.name} ({model.num_layers} layers, {run_info['source']['kind']} weights), tp {spec.tp}, "
          f"{spec.dtype} on {spec.device}; budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, "
          f"kv_tokens {cfg.kv_tokens}; scheduler {args.scheduler}", flush=True)
    first = min(a.rid for a in job.workload.requests)
    jobs = jobs_to_launch(spec, job, first, model.vocab, pool)
    stream = TextStream(codec) if codec is not None else None

    def on_step(record: Any) -> None:
        line = stream.line(record) if stream is not None else None
        if line is not None:
            print(line, flush=True)

    show = shows_progress(args)
    if show:
        print(f"launching {spec.tp} rank(s) ...", file=sys.stderr, flush=True)
    launched = launch_ranks(replace(spec, jobs=jobs), args, on_step)
    if isinstance(launched, int):
        return launched
    result = launched.results[0]
    texts = print_answers(result, codec, chat, args.max_new) if codec is not None else {}
    print_tables(result, cfg.token_budget)
    print()
    cancelling = job.cancels or job.workload.cancels
    ends = (("TOKENS",) if job.stop_token is not None else ()) + (("CANCEL",) if cancelling else ())
    print("\n".join(verdicts(result, job.monitor_rules, ends)))
    checks: dict[str, Any] = {}
    failed = not result.ok
    if job.keep_logits and result.ok:
        failed = output_checks(spec, job, launched.results, first, checks) or failed
    elif job.keep_logits:
        print("EXACTNESS        not judged: a rule broke, the run did not finish")
    if args.json is not None:
        try:
            write_json(args, run_json(result, job, run_info, checks, texts, ends))
        except ValueError as error:  # checked before the run, yet the write failed
            print(f"stallfree run: {error}", file=sys.stderr)
            return exits.USAGE
    if result.violation is not None and result.violation[0] in (CRASH, TIMEOUT):  # the scheduler's, no rule's
        how = "raised" if result.violation[0] == CRASH else "did not answer"
        print(f"stallfree run: {args.scheduler} {how}: {result.violation[2]}", file=sys.stderr)
        return exits.CRASHED
    named = broken_names(result, checks)
    if named:
        print(f"stallfree run: BROKEN: {', '.join(named)}", file=sys.stderr)
    return exits.BROKEN if failed else exits.HOLDS


def launch_ranks(spec: RunSpec, args: argparse.Namespace, on_step: Any) -> Any:
    """The launched run, or the exit status when a rank hung, crashed or the scheduler could not be
    built: no verdict past any of them."""
    from stallfree.executor.runs.launch import RankFailure, launch

    try:
        return launch(spec, timeout_s=args.timeout, on_step=on_step)
    except TimeoutError as error:  # a rank hung
        print(f"stallfree run: --timeout {args.timeout:g}: {error}", file=sys.stderr)
        return exits.CRASHED
    except RankFailure as error:  # a rank crashed
        print(f"stallfree run: {error}", file=sys.stderr)
        return exits.CRASHED
    except FactoryError as error:
        print(f"stallfree run: {error}", file=sys.stderr)
        return exits.USAGE


def jobs_to_launch(spec: RunSpec, job: Job, first: int, vocab: int,
                   pool: tuple[int, int] | None = None) -> tuple[Job, ...]:
    """The job, and where it keeps logits its exactness twins: the same workload with one prompt token of
    request `first` changed (isolation), and, for a design that preempts (`pool`: its block_size and
    watermark), the same workload on a pool that never preempts (recompute)."""
    from stallfree.executor.exactness.isolation import perturbed

    # Its stops are those of the first run, replayed (the same plans), whatever rid 0 now samples.
    twin = replace(perturbed(job, first, spec.seed, vocab), stream=False, replay_ends=True)
    jobs = (job, twin) if job.keep_logits else (job,)
    roomy = unpreempted(job, pool) if pool is not None else None
    if roomy is not None and job.keep_logits:  # recompute exactness: the same workload on a pool that never preempts
        jobs = (*jobs, roomy)
    return jobs


def print_answers(result: JobResult, codec: TextCodec, chat: Any, max_new: int | None) -> dict[int, Any]:
    """Prints each request's answer as text; returns, by rid, its prompt text and ids and its answer."""
    from stallfree.executor.runs.text import answers

    print()
    print("\n".join(answers(codec, chat.texts, {rid: r.outputs for rid, r in result.requests.items()},
                            max_new, {rid: r.finish_reason for rid, r in result.requests.items()})))
    return {rid: {"prompt_text": chat.texts[rid], "prompt_ids": r.prompt, "text": codec.answer(r.outputs)}
            for rid, r in result.requests.items()}


def print_tables(result: JobResult, token_budget: int) -> None:
    """Prints the run's step table and request table, and the requests add() refused."""
    from stallfree.executor.runs.report import request_table, step_table

    print()
    print("\n".join(step_table(result, token_budget)))
    print()
    print("\n".join(request_table(result)))
    if result.refused:
        print(f"refused by add() (rule NEVER-FIT: prompt_len + max_new > kv_tokens, or invalid): {result.refused}")


def run_json(result: JobResult, job: Job, run_info: Any, checks: dict[str, Any], texts: dict[int, Any],
             ends: tuple[str, ...]) -> dict[str, Any]:
    """The run's JSON report: the run, its output checks and texts, and the verdicts where each was judged."""
    from stallfree.executor.runs.report import as_json, judgements
    from stallfree.spec.verdict import as_json as verdicts_json

    sections, unlisted = judgements(result, job.monitor_rules, ends)
    return as_json(result, run_info, checks, texts) | {
        "verdicts": {where: verdicts_json(judged) for where, judged in sections.items()}
        | ({"unlisted": verdicts_json(unlisted)} if unlisted else {})}


def broken_names(result: JobResult, checks: dict[str, Any]) -> list[str]:
    """What failed, by name: the broken rule (and where it was judged), then each failed output check."""
    names = [f"{result.violation[0]} ({result.violation[3]}, step {result.violation[1]})"] if result.violation else []
    return names + [name.upper() for name, check in checks.items() if isinstance(check, dict) and check["ok"] is False]


def unpreempted(job: Job, pool: tuple[int, int]) -> Job:
    """For a paged scheduler (`pool`: its block_size and watermark), `job` on a pool that holds every
    request's peak at once (so nothing is ever preempted)."""
    from stallfree.spec.paged.shadow import blocks_for

    c = job.workload.config
    block_size, watermark = pool
    need = sum(blocks_for(a.prompt_len + a.max_new - 1, block_size) for a in job.workload.requests)
    num_blocks = need + need // 99 + 1 + watermark  # above the default 1% watermark too
    config = Config(c.token_budget, c.max_seqs, max(c.kv_tokens, num_blocks * block_size))
    return replace(job, workload=replace(job.workload, config=config), stream=False, label="unpreempted")


def output_checks(spec: RunSpec, job: Job, results: list[JobResult], first: int, checks: dict[str, Any]) -> bool:
    """Exactness (fp32 runs), isolation, and accuracy as measurements; True when a check fails."""
    from stallfree.executor.exactness.accuracy import dtype_accuracy, measure
    from stallfree.executor.exactness.equivalence import compare, reference_logits, reference_model, run_logits
    from stallfree.executor.exactness.isolation import isolation
    from stallfree.executor.layers.sampler import Sampler
    from stallfree.executor.runs.report import check_json

    result = results[0]
    if not result.requests:
        print("EXACTNESS        not judged: no request ran (every one was refused)")
        checks["exactness"] = {"ok": None, "why": "no request ran"}
        return False
    fp32 = reference_logits(reference_model(spec), result)
    failed = False
    if spec.dtype == "fp32":
        exact = compare(spec, result, sampler=Sampler(job.temperature, spec.seed), reference=fp32,
                        stop_token=job.stop_token)
        print(exact.summary())
        checks["exactness"] = check_json(exact)
        failed = exact.ok is False
        measured = dtype_accuracy(spec, result, fp32)
    else:
        from stallfree.executor.exactness.agreement import agreement

        print(f"EXACTNESS        not judged: {spec.dtype} weights round (exactness is judged in fp32: --dtype fp32)")
        checks["exactness"] = {"ok": None, "why": f"not judged for {spec.dtype}"}
        alone = reference_logits(reference_model(spec, spec.dtype), result)
        failed = judged(checks, "agreement", agreement(spec.dtype, run_logits(result), alone), "")
        measured = [measure(f"{spec.dtype} (this run)", run_logits(result), fp32)]
    exact_logits = run_logits(result) if spec.dtype == "fp32" else fp32
    failed = independent(spec, result, exact_logits, checks) or failed
    failed = judged(checks, "isolation", isolation(result, results[1], first) if results[1].ok else None,
                    f"ISOLATION        not judged: the perturbed run broke {results[1].violation}") or failed
    if len(results) > 2:  # the paged design: the same workload on a pool that never preempts
        from stallfree.executor.exactness.recompute import recompute_exactness

        if spec.dtype != "fp32":
            why = f"RECOMPUTE        not judged: {spec.dtype} weights round (judged in fp32: --dtype fp32)"
        else:
            why = f"RECOMPUTE        not judged: the unpreempted run broke {results[2].violation}"
        recompute = recompute_exactness(result, results[2]) if spec.dtype == "fp32" and results[2].ok else None
        failed = judged(checks, "recompute", recompute, why) or failed
    for a in measured:
        print(a.summary())
    checks["accuracy"] = [check_json(a) for a in measured]
    return failed


def independent(spec: RunSpec, result: JobResult, logits: dict[int, Any], checks: dict[str, Any]) -> bool:
    """INDEPENDENT: a real checkpoint's fp32 logits (the run's in fp32; in fp8 its one-rank fp32
    reference's) against a numpy forward pass of the file that shares none of the executor's math
    (executor/exactness/plainref.py). True when it fails; not judged with `--layers`, absent for random weights
    (nothing independent computes them)."""
    from stallfree.executor.exactness.independent import independent_check

    gguf = spec.gguf
    if gguf is None:
        return False
    if spec.num_layers is not None:
        return judged(checks, "independent", None,
                      f"INDEPENDENT      not judged: --layers {spec.num_layers} (the file has every layer)")
    of = "the run's logits" if spec.dtype == "fp32" else "the one-rank fp32 reference's logits"
    check = independent_check(of, spec.model_config(), gguf.path, result.requests, logits)
    return judged(checks, "independent", check, "")


def judged(checks: dict[str, Any], name: str, check: Any, why_not: str) -> bool:
    """Print `check` and keep it in `checks[name]`; None: print why it was not judged. True when it failed."""
    from stallfree.executor.runs.report import check_json

    if check is None:
        print(why_not)
        checks[name] = {"ok": None, "why": why_not.split("not judged: ", 1)[1]}
        return False
    print(check.summary())
    checks[name] = check_json(check)
    return check.ok is False
