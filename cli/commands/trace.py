"""`stallfree trace`: run a workload through the reference (or any scheduler) under the monitor
and print the step table and a verdict per rule."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from stallfree.spec import (
    RULE_IDS,
    Arrival,
    Config,
    FieldTypeError,
    InvalidField,
    Monitor,
    Request,
    RuleViolation,
    Shadow,
    StepFacts,
    Workload,
    play,
    refusal,
)
from stallfree.spec.verdict import CRASH, TIMEOUT, as_json, lines

from .. import exits
from ..steptable import HEADER, row, verdicts
from .args import (
    FactoryError,
    add_output_arguments,
    check_json,
    check_output_file,
    guarded,
    load_scheduler,
    path_error,
    positive_int,
    read_workload,
    request_spec,
    rule_list,
    seconds,
    write_json,
)

NAME = "trace"
HELP = "run requests through a scheduler under the monitor; print the step table and rule verdicts"

# The hand trace of the contract: budget 8, one request decoding, a 20-token prompt arrives.
HAND_TRACE = Workload(
    Config(token_budget=8, max_seqs=4, kv_tokens=64),
    (Arrival(0, 8, 6, 0), Arrival(1, 20, 3, 1)),
)
EXAMPLES = {"hand": HAND_TRACE}


DEFAULTS = {"budget": 8, "max_seqs": 4, "kv": 256}  # of a workload given as --request flags
DEFAULT_TIMEOUT = 60.0  # seconds for one step of the scheduler: the reference takes microseconds
MAX_STEPS = 1_000_000  # a step table longer than this is for `campaign` or `check-trace`, not for reading


def steps_needed(workload: Workload) -> int:
    """The work bound (rule PROGRESS) over the requests the contract accepts: no run of a scheduler
    that keeps PROGRESS takes more steps, and the run is stopped there if PROGRESS is not checked."""
    cfg = workload.config
    fits = [a for a in workload.requests if type(a.prompt_len) is int and type(a.max_new) is int
            and a.prompt_len >= 1 and a.max_new >= 1 and a.prompt_len + a.max_new <= cfg.kv_tokens]
    return max((a.arrival_step for a in workload.requests), default=0) + sum(a.prompt_len + a.max_new for a in fits)


def configure(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group()
    source.add_argument("--example", choices=sorted(EXAMPLES),
                        help="a built-in workload (hand: the contract's hand trace)")
    source.add_argument("--workload", type=Path, metavar="FILE", help="a JSON workload (see stallfree.spec.workload)")
    p.add_argument("--request", type=request_spec, action="append", default=[], metavar="RID:PROMPT:MAX_NEW[@STEP]",
                   help="a request arriving before step STEP (default 0); repeatable")
    p.add_argument("--budget", type=positive_int, default=None, help="token budget B (default 8)")
    p.add_argument("--max-seqs", type=positive_int, default=None, help="slots S (default 4)")
    p.add_argument("--kv", type=positive_int, default=None, help="KV capacity K in tokens (default 256)")
    p.add_argument("--scheduler", default="stallfree.reference:Scheduler", metavar="MODULE:FACTORY",
                   help="the scheduler to trace (default: the reference)")
    p.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID", help="check only these rules")
    p.add_argument("--jsonl", type=Path, metavar="FILE",
                   help="also write the run as a JSON Lines trace, the format `stallfree check-trace` reads")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"a step or add of the scheduler taking longer is a TIMEOUT (default {DEFAULT_TIMEOUT:g})")
    add_output_arguments(p, "the verdicts")


def workload_from(args: argparse.Namespace) -> Workload:
    if args.example or args.workload:
        given = [flag for flag, value in (("--request", args.request), ("--budget", args.budget),
                                          ("--max-seqs", args.max_seqs), ("--kv", args.kv)) if value]
        if given:
            source = f"--example {args.example}" if args.example else "--workload"
            raise InvalidField(f"{', '.join(given)} would be ignored: {source} brings its own config and requests")
    if args.example:
        return EXAMPLES[args.example]
    if args.workload:
        return read_workload(args.workload)
    if not args.request:
        raise InvalidField("give --example hand, --workload FILE or at least one --request")
    config = {k: DEFAULTS[k] if getattr(args, k) is None else getattr(args, k) for k in DEFAULTS}
    return Workload(Config(config["budget"], config["max_seqs"], config["kv"]), tuple(args.request))


def run(args: argparse.Namespace) -> int:
    try:
        workload = workload_from(args)
        if steps_needed(workload) > MAX_STEPS:
            source = f"--workload {str(args.workload)!r}" if args.workload else "--request"
            raise InvalidField(f"{source}: its requests may take up to {steps_needed(workload):,} steps; "
                               f"trace runs at most {MAX_STEPS:,} (check more with stallfree campaign or check-trace)")
        factory = guarded(load_scheduler(args.scheduler), args.scheduler)
        if args.jsonl:
            check_output_file("--jsonl", args.jsonl)
        check_json(args)
    except (InvalidField, FieldTypeError, ValueError) as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    try:
        jsonl = PendingFile("--jsonl", args.jsonl) if args.jsonl else None
    except ValueError as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    keep = False
    try:
        status = trace(args, workload, factory, jsonl.out if jsonl else None)
        keep = status != exits.USAGE
        return status
    finally:
        if jsonl is not None:
            jsonl.close(keep)


class PendingFile:
    """An output file written as a run goes, under a temporary name beside it: renamed into place when
    the run has been judged, removed when it never was, so no half-written FILE is left."""

    def __init__(self, flag: str, path: Path) -> None:
        self.flag, self.path = flag, path
        try:
            fd, self.temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        except OSError as error:
            raise path_error(flag, path, error) from None
        self.out: IO[str] = os.fdopen(fd, "w")

    def close(self, keep: bool) -> None:
        self.out.close()
        if keep:
            try:
                os.chmod(self.temporary, 0o644)
                os.replace(self.temporary, self.path)
                return
            except OSError as error:
                print(f"stallfree trace: {path_error(self.flag, self.path, error)}", file=sys.stderr)
        with contextlib.suppress(OSError):
            os.unlink(self.temporary)


def trace(args: argparse.Namespace, workload: Workload, factory: Callable[..., Any], jsonl: IO[str] | None) -> int:
    from stallfree.conformance.tracefile import TraceWriter

    cfg = workload.config
    writer = TraceWriter(jsonl, cfg, {"scheduler": args.scheduler}) if jsonl is not None else None
    print(f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}; "
          f"scheduler {args.scheduler}")
    print(HEADER)
    # The requests as the contract knows them, so a refusal is explained by what the spec says.
    offered = Shadow(cfg)
    idle = IdleSteps()
    notes: list[str] = []

    def on_add(a: Arrival, accepted: bool) -> None:
        watchdog.rearm()
        idle.flush()
        if writer is not None:
            writer.offered(a.rid, a.prompt_len, a.max_new, accepted)
        if accepted:
            offered.accept(Request(a.rid, a.prompt_len, a.max_new))
            return
        why = refusal(offered, a.rid, a.prompt_len, a.max_new) or "the contract would accept it (NEVER-FIT not checked)"
        print(f"{'':>5}  refused: add({a.rid}, {a.prompt_len}, {a.max_new}): {why}")

    done = [0]  # steps judged, when play() does not return to say so

    def on_step(monitor: Monitor, facts: StepFacts) -> None:
        watchdog.rearm()
        done[0] = facts.step + 1
        if not notes:
            notes.append(free_kv_note(monitor.scheduler))
        if not facts.plan and monitor.is_idle:
            idle.add(facts.step)
        else:
            idle.flush()
            print(row(facts, cfg.token_budget, monitor.shadow.free_kv))
        if writer is not None:
            writer.step(facts.step, facts.plan, facts.emitted, [t.rid for t in facts.finished])

    violation = crash = None
    stopped_by = CRASH
    stats = None
    watchdog = Watchdog(args.timeout)
    try:
        with watchdog:
            stats = play(workload, factory, args.rules, on_step=on_step, on_add=on_add)
        # A run stopped by a broken rule, or still pending at the work bound, has no end line: it did
        # not end (as record_trace writes it).
        if writer is not None and "stopped_at_bound" not in stats.extra:
            writer.end()
    except RuleViolation as error:
        violation = error
    except FactoryError as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    except Hung as error:
        crash, stopped_by = str(error), TIMEOUT
    except Exception as error:  # the scheduler raised: no rule judged it, and the run cannot go on
        crash = f"{type(error).__name__}: {error}"[:300]
    idle.flush()
    steps = stats.steps if stats else done[0]
    adds = stats.accepted + stats.refused if stats else 0
    judged = verdicts(args.rules or RULE_IDS, steps, violation, adds, crash, stopped_by)
    print()
    for line in lines(judged):
        print(line)
    for note in notes:
        if note:
            print(f"note: {note}")
    if stats is not None and "stopped_at_bound" in stats.extra:
        print(f"note: work still pending after {stats.extra['stopped_at_bound']} steps (PROGRESS not checked)")
    write_json(args, {"scheduler": args.scheduler, "config": workload.to_json()["config"],
                      "rules": as_json(judged)})
    if crash is not None:
        said = "did not answer" if stopped_by == TIMEOUT else "raised"
        print(f"stallfree trace: {args.scheduler} {said}: {crash}", file=sys.stderr)
        return exits.CRASHED
    return exits.BROKEN if violation else exits.HOLDS


def free_kv_note(scheduler: object) -> str:
    """A `free_kv` the monitor cannot read is said, not silently passed over (rule KV then checks only
    the reservations it follows itself)."""
    free_kv = getattr(scheduler, "free_kv", None)
    if free_kv is None or type(free_kv) is int:
        return ""
    return f"the scheduler's free_kv is {type(free_kv).__name__} {free_kv!r:.40}, not an int: not compared"


class Hung(Exception):
    """No step (or add) of the scheduler finished within the timeout."""


class Watchdog:
    """SIGALRM after `seconds` without a step or an add: a scheduler stuck in Python code (a loop, a
    sleep) is stopped there and reported as TIMEOUT, not waited for. Rearmed by each step and add."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.previous: Any = None
        self.started = 0.0
        self.outer = 0.0
        self.armed = False

    def _fire(self, *_: object) -> None:
        raise Hung(f"no step finished within {self.seconds:g} s (--timeout)")

    def rearm(self) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __enter__(self) -> Watchdog:
        # Signals reach the main thread only: called from another thread, trace runs without a watchdog.
        self.armed = threading.current_thread() is threading.main_thread()
        if not self.armed:
            return self
        self.previous = signal.signal(signal.SIGALRM, self._fire)
        self.started = time.monotonic()
        self.outer = signal.setitimer(signal.ITIMER_REAL, self.seconds)[0]  # a caller's own alarm, if any
        return self

    def __exit__(self, *_: object) -> None:
        if not self.armed:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
        if self.outer:  # give the caller's alarm back, less the time spent here
            signal.setitimer(signal.ITIMER_REAL, max(self.outer - (time.monotonic() - self.started), 0.001))


class IdleSteps:
    """Steps with nothing waiting or running, printed as one line per stretch, not one per step."""

    def __init__(self) -> None:
        self.first: int | None = None
        self.last = 0

    def add(self, step: int) -> None:
        if self.first is None:
            self.first = step
        self.last = step

    def flush(self) -> None:
        if self.first is None:
            return
        count = self.last - self.first + 1
        stretch = f", {count:,} steps to {self.last}" if count > 1 else ""
        print(f"{self.first:>5}  (idle: nothing waiting or running{stretch})")
        self.first = None
