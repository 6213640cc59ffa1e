"""`stallfree prove`: the model checker, the Z3 theorems, the differential check and CrossHair, as one
table (claim, method, bound, result, seconds). Exit 0 only if no claim is broken or unknown (CrossHair's
"not refuted" is counted apart: searched, nothing found, nothing proved); 1 if one is broken or
undecided; 2 on bad arguments; 3 if the scheduler checked crashed. `--fault RULE` runs the same
checks on that rule's negative controls: the checks that judge RULE must then fail."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from stallfree.conformance.isolation.remote import CallHung
from stallfree.spec.verdict import Verdict

from .. import exits
from . import supervised
from .args import (
    add_output_arguments,
    bounded_int,
    check_json,
    load_scheduler,
    positive_float,
    seconds,
    shows_progress,
    write_json,
)
from .timed import Watch

NAME = "prove"
DEFAULT_TIMEOUT = 60.0  # seconds one call of a --scheduler may take in the model check
HELP = "prove the rules: model check the reference, Z3 theorems, CrossHair contracts; print the table"

METHODS = ("model", "symbolic", "z3", "differential", "crosshair", "variants", "quint")
# The reference's claims, in about a minute; the variants' contracts (docs/variants.md) and the Quint spec
# (docs/proofs.md; needs node) take longer: asked for.
DEFAULT_METHODS = ("model", "symbolic", "z3", "differential", "crosshair")
SCHEDULER_METHODS = "model,symbolic"  # with --scheduler: the methods that run its own code
# A paged or prefix scheduler's methods: the symbolic execution builds the reservation design's fields.
PAGED_METHODS = tuple(m for m in METHODS if m != "symbolic")
MAX_REQUESTS = 64  # symbolic requests per Z3 theorem: past this a proof takes hours
MAX_CODE_REQUESTS = 6  # past this the paths of one state number millions
MAX_STATES = 10**9
MAX_CROSSHAIR_SECONDS = 3600.0
MAX_JOBS = 64
DEFAULT_JOBS = 2  # the methods' worker processes (proofs/suite_jobs.py); fewer on a machine with fewer cores


def crosshair_seconds(text: str) -> float:
    return positive_float(text, MAX_CROSSHAIR_SECONDS)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bound", default=None, metavar="B,S,K,R,P,M",
                   help="model-check bound: budget, slots, KV, adds, max prompt, max max_new (default 2,3,8,4,3,3)")
    p.add_argument("--liveness-bound", default=None, metavar="B,S,K,Q,P,M",
                   help="the LIVENESS model check's bound: Q is the most requests waiting at once, arrivals never "
                        "stop (default 2,2,8,2,3,2)")
    p.add_argument("--requests", type=bounded_int(MAX_REQUESTS), default=None, metavar="N",
                   help=f"symbolic requests in each Z3 step theorem, at most {MAX_REQUESTS} (default 12; 8 for the "
                        "cancel theorems; 5 for the paged step theorems of --scheduler paged)")
    p.add_argument("--code-requests", type=bounded_int(MAX_CODE_REQUESTS), default=None, metavar="N",
                   help="requests per state in the symbolic execution of the scheduler's code, at most "
                        f"{MAX_CODE_REQUESTS} (default 3 for a step, 2 with stops or cancels; deep: 4 and 3)")
    p.add_argument("--crosshair-seconds", type=crosshair_seconds, default=None, metavar="S",
                   help="CPU seconds CrossHair spends on each contract (default 4; 15 with --fault)")
    p.add_argument("--methods", default=None, metavar="M,M",
                   help=f"which checks to run, of {','.join(METHODS)} (default {','.join(DEFAULT_METHODS)}; "
                        "model alone with --scheduler)")
    p.add_argument("--fault", default=None, metavar="RULE",
                   help="run the negative controls of RULE instead: its faulty scheduler, its wrong Z3 policy, "
                        "its planted CrossHair bug; the checks that judge RULE must then fail (the others may hold)")
    p.add_argument("--scheduler", default=None, metavar="MODULE:FACTORY",
                   help="model-check this scheduler instead, and run its code symbolically (a class kept in the "
                        "reference's fields; the other Z3 theorems, the differential check and CrossHair are about "
                        "the reference's own code); `paged` (or any "
                        "factory of the paged design) runs the paged rows, and --fault then names a paged rule or a "
                        "paged fault (StopIgnored)")
    p.add_argument("--hidden", default=None, metavar="MODULE:FUNCTION",
                   help="with --scheduler: the function giving the scheduler's state that the model checker's "
                        "key leaves out (a step counter, a cache), or 'none'; without it the model-check claims "
                        "are refused (the project's own paged scheduler, `paged`, excepted; a prefix scheduler not "
                        "the project's is not run)")
    p.add_argument("--profile", choices=("default", "deep"), default="default",
                   help="deep: model-check bound 2,3,8,5,3,3, liveness 2,3,8,2,3,3, N=16 Z3 requests, 100,000 random "
                        "differential states, the variants' checks with stops and cancels at a deeper bound (minutes); "
                        "explicit flags override it")
    p.add_argument("--max-states", type=bounded_int(MAX_STATES), default=None, metavar="N",
                   help="stop the model check past N states")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="with --scheduler: a call of it taking longer ends the model check, exit 3 naming the "
                        f"call (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--jobs", type=bounded_int(MAX_JOBS), default=None, metavar="N",
                   help="worker processes the methods run in at once (default 2, or 1 on one core); the rows and "
                        "verdicts are the same for any N")
    add_output_arguments(p, "the rows")


# The module each method needs beyond the standard library (the `proofs` extra); the model check needs none.
NEEDS = {"z3": "z3", "symbolic": "z3", "differential": "z3", "crosshair": "crosshair"}


def missing_extra(methods: tuple[str, ...], fault: bool) -> str | None:
    """Why the methods asked for cannot run here (the proofs extra missing), or None."""
    wanted = {NEEDS[m] for m in methods if m in NEEDS} | ({"z3"} if fault else set())
    for module in sorted(wanted, reverse=True):  # z3 first: crosshair-tool brings it
        try:
            importlib.import_module(module)
        except ImportError as error:
            who = ",".join(m for m in methods if NEEDS.get(m) == module) or "model"
            asked = "--fault (its controls are Z3 policies)" if fault and module == "z3" else f"--methods {who}"
            return f"{asked} needs {module} ({error}): pip install 'stallfree[proofs]'; --methods model runs without it"
    return None


def with_fault(options, fault: str, methods: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    """--fault RULE: the suite's options set to run the negative controls of RULE (the controls need z3)."""
    from stallfree.proofs.contracts import run as crosshair_run

    missing = missing_extra(methods, True)
    if missing is not None:
        raise ValueError(missing)
    from stallfree.proofs import controls

    rule = fault.upper()
    try:
        options.factory = controls.fault(rule)
        options.policy = controls.mutant(rule)
    except ValueError as error:
        raise ValueError(f"--fault {fault!r}: {error}") from None
    options.hidden = controls.hidden_for(rule)
    options.rules = controls.judged(rule)
    options.bound = controls.control_bound(rule)
    options.fault_rule = rule
    options.coverage_bound = None  # a control is judged at its own bound
    options.crosshair_seconds = crosshair_run.PLANTED_S


def _options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from stallfree.proofs.explicit.bounds import Bounds
    from stallfree.proofs.suite import Options

    options = Options()
    default = SCHEDULER_METHODS if args.scheduler is not None else ",".join(DEFAULT_METHODS)
    text = args.methods if args.methods is not None else default
    methods = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"--methods {text!r}: expected some of {','.join(METHODS)}")
    about_reference = [m for m in methods if m not in ("model", "symbolic", "differential")]
    if args.scheduler is not None and about_reference:
        others = ",".join(about_reference)
        raise ValueError(f"--scheduler {args.scheduler!r} is model-checked, run symbolically and compared with the Z3 "
                         f"step only; --methods {others} would prove the reference instead: give --methods "
                         "model,symbolic,differential")
    options.methods = methods
    if args.profile == "deep":
        from stallfree.proofs import suite

        options.deep = True
        options.bound, options.liveness_bound = Bounds.parse(suite.DEEP_BOUND), Bounds.parse(suite.DEEP_LIVENESS_BOUND)
        options.num_requests, options.random_states = suite.DEEP_REQUESTS, suite.DEEP_RANDOM_STATES
        options.cancel_requests, options.random_cancels = suite.DEEP_CANCEL_REQUESTS, suite.DEEP_RANDOM_CANCELS
    if args.fault is not None:
        with_fault(options, args.fault, methods)
    if args.bound is not None:
        try:
            options.bound = Bounds.parse(args.bound)
            options.coverage_bound = None  # the bound asked for, alone
        except (ValueError, TypeError) as error:  # the field named by Bounds, the flag and value here
            raise ValueError(f"--bound {args.bound!r}: {str(error).removeprefix(f'bound {args.bound!r}: ')}") from None
    if args.liveness_bound is not None:
        try:
            options.liveness_bound = Bounds.parse(args.liveness_bound)
        except (ValueError, TypeError) as error:
            raise ValueError(f"--liveness-bound {args.liveness_bound!r}: {error}") from None
    if args.scheduler is not None:
        options.factory = timed(args, load_scheduler(args.scheduler))
        options.hidden_declared = args.hidden is not None
    if args.hidden is not None:
        if args.scheduler is None:
            raise ValueError(f"--hidden {args.hidden!r} needs --scheduler: the reference has no hidden state")
        options.hidden = None if args.hidden == "none" else load_scheduler(args.hidden, "--hidden")
    if args.requests is not None:
        options.num_requests = options.cancel_requests = args.requests
    options.code_requests = args.code_requests
    options.jobs = args.jobs if args.jobs is not None else min(DEFAULT_JOBS, os.cpu_count() or 1)
    if args.crosshair_seconds is not None:
        options.crosshair_seconds = args.crosshair_seconds
    if args.max_states is not None:
        options.max_states = args.max_states
    check_json(args)
    return options


def timed(args: argparse.Namespace, factory: Callable[..., Any]) -> Callable[..., Any]:
    """`factory`, each call of the schedulers it makes timed by the --timeout countdown and marked on the
    board of the watchdog outside this process (`supervised`), which ends a call stuck in C."""
    return watched(args).timed(factory)


def watched(args: argparse.Namespace) -> Watch:
    """The --timeout countdown of every --scheduler call, its board made before the work's child is forked."""
    if getattr(args, "watch", None) is None:
        args.watch = Watch(args.timeout, supervised.Board())
    return args.watch


def paged_rows(args: argparse.Namespace, say):  # type: ignore[no-untyped-def]
    """The rows of a paged scheduler (`--scheduler paged`, or any factory declaring design "paged")."""
    from stallfree.paged import Scheduler, small_blocks
    from stallfree.proofs import paged_suite
    from stallfree.proofs.explicit.bounds import Bounds

    factory = load_scheduler(args.scheduler)
    bound = Bounds.parse(args.bound or paged_suite.DEFAULT_BOUND)
    if args.fault is not None:
        rule = args.fault.upper()
        factory = paged_suite.fault(rule)
        bound = Bounds.parse(args.bound) if args.bound else paged_suite.control_bound(rule)
    elif factory is Scheduler:  # 16-token blocks refuse every request of a small bound
        say("the model check runs stallfree.paged with 2-token blocks (small_blocks): 16-token blocks "
            "refuse every request of a small bound")
        factory = small_blocks
    methods = paged_methods(args)
    # The paged scheduler's own factories and the faults are this project's; another scheduler of the
    # paged design declares its hidden state, or its model-check claims are refused (as for any --scheduler).
    own = factory is small_blocks or args.fault is not None  # `paged` (Scheduler) became small_blocks above
    hidden = None if args.hidden in (None, "none") else load_scheduler(args.hidden, "--hidden")
    declared = own or args.hidden is not None
    factory = timed(args, factory)
    rows = paged_suite.model_rows(bound, factory, args.max_states, hidden, declared) if "model" in methods else []
    fault_rule = args.fault.upper() if args.fault else None
    if "z3" in methods:
        rows += paged_suite.z3_rows(fault_rule, args.requests)
    if "crosshair" in methods:
        rows += paged_suite.crosshair_rows(fault_rule, args.crosshair_seconds or paged_suite.CROSSHAIR_S)
    if "differential" in methods:
        rows += paged_suite.differential_rows(factory)
    return rows + paged_suite.not_applicable(methods)


def paged_methods(args: argparse.Namespace) -> tuple[str, ...]:
    """The methods a paged scheduler is proved by: all of them unless --methods names some (each has
    paged rows: the paged model check, the paged Z3 theorems, the paged CrossHair contracts)."""
    text = args.methods if args.methods is not None else ",".join(PAGED_METHODS)
    methods = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"--methods {text!r}: expected some of {','.join(METHODS)}")
    return methods


def design_name(args: argparse.Namespace) -> str:
    """The design --scheduler declares (`stallfree.spec.registry`), the reservation's without one."""
    from stallfree.spec import registry

    return registry.of(load_scheduler(args.scheduler)).name if args.scheduler is not None else "reservation"


def prefix_rows(args: argparse.Namespace, say=None):  # type: ignore[no-untyped-def]
    """The rows of a prefix-caching scheduler: its model check (the project's own scheduler and faults,
    or another one whose state outside the key --hidden declares), its Z3 theorems, the other methods not
    checked."""
    from stallfree.proofs import prefix_suite
    from stallfree.proofs.explicit.bounds import Bounds

    factory = load_scheduler(args.scheduler)
    bound = Bounds.parse(args.bound or prefix_suite.DEFAULT_BOUND)
    if args.fault is not None:
        factory = prefix_suite.fault(args.fault.upper())
        bound = Bounds.parse(args.bound) if args.bound else prefix_suite.control_bound(args.fault.upper())
    methods = paged_methods(args)  # an outside scheduler without --hidden was refused (check_paged_arguments)
    hidden = None if args.hidden in (None, "none") else load_scheduler(args.hidden, "--hidden")
    factory = timed(args, factory)
    rows = prefix_suite.model_rows(bound, factory, args.max_states, hidden) if "model" in methods else []
    if "z3" in methods:
        rows += prefix_suite.z3_rows(args.fault.upper() if args.fault else None, args.profile == "deep")
    return rows + prefix_suite.not_written(methods)


def refuse_undeclared_prefix(args: argparse.Namespace, factory: object) -> None:
    """Raises (a bad argument, exit 2) for a prefix scheduler from outside stallfree without --hidden: its
    model check needs its state outside the key declared."""
    from stallfree.prefix import faults, small_blocks

    if factory not in (small_blocks, faults.small) and not getattr(factory, "__module__", "").startswith(
            "stallfree.prefix") and args.hidden is None:
        raise ValueError(f"--scheduler {args.scheduler!r}: the prefix model check runs the project's own prefix "
                         "schedulers (stallfree.prefix:small_blocks, the faults), or another one whose state "
                         "outside the key --hidden declares")


def check_paged_arguments(args: argparse.Namespace, prefix: bool) -> None:
    """Raises on a bad argument to the paged (or, with `prefix`, the prefix) suite, before anything runs:
    the methods, --fault's rule, --bound and --hidden."""
    paged_methods(args)
    if prefix and args.fault is not None:
        from stallfree.proofs import prefix_suite

        prefix_suite.fault(args.fault.upper())  # an unknown prefix rule is a bad argument, found here
    elif prefix:
        refuse_undeclared_prefix(args, load_scheduler(args.scheduler))
    elif args.fault is not None:
        from stallfree.proofs import paged_suite

        paged_suite.fault(args.fault.upper())  # an unknown paged rule is a bad argument, found here
    if args.bound is not None:
        from stallfree.proofs.explicit.bounds import Bounds

        Bounds.parse(args.bound)
    if args.hidden not in (None, "none"):
        load_scheduler(args.hidden, "--hidden")  # a --hidden that does not load is a bad argument


# The designs whose rows come from a suite of their own, by registry name; the others run the reservation
# design's suite (`stallfree.proofs.suite`).
OWN_SUITES = {"paged": paged_rows, "prefix": prefix_rows}


def run(args: argparse.Namespace) -> int:
    try:
        from stallfree.proofs import suite
    except ImportError as error:  # z3 or crosshair missing: the proofs extra is not installed
        print(f"stallfree prove: {error}; install the extra: pip install 'stallfree[proofs]'", file=sys.stderr)
        return exits.USAGE
    from stallfree.spec import FieldTypeError, InvalidField

    try:
        own = OWN_SUITES.get(design_name(args))  # a design with a suite of its own; else the reservation's
        options = None if own else _options(args)
        if own:
            check_paged_arguments(args, own is prefix_rows)
            watched(args)  # the countdown of the design's own model check (`paged_rows`, `prefix_rows`)
        missing = None if options is None else missing_extra(options.methods, False)
        if missing is not None:
            raise ValueError(missing)
    except (InvalidField, FieldTypeError, ValueError, ImportError, AttributeError) as error:
        print(f"stallfree prove: {error}", file=sys.stderr)
        return exits.USAGE

    show = shows_progress(args)

    def say(message: str) -> None:
        if show:
            print(f"  {message}", file=sys.stderr, flush=True)

    def rows_of() -> list:  # type: ignore[type-arg]
        return own(args, say) if own else suite.run(options, say)

    watch = getattr(args, "watch", None)
    if watch is not None and watch.board is not None:  # the work in a child, a call stuck in C ended from here
        from ..main import ended

        def work(out: TextIO) -> int:  # in the child: `out` is where its output goes
            args.stdout = out
            return judge(args, rows_of)

        return supervised.supervise(work, watch.board, watch.seconds,
                                    lambda call: not_answered(args, watch.message(call)),
                                    lambda error: ended(NAME, error), checked(args),
                                    getattr(args, "stdout", None) or sys.stdout)
    return judge(args, rows_of)


def judge(args: argparse.Namespace, rows_of: Callable[[], list]) -> int:  # type: ignore[type-arg]
    """The rows `rows_of()` runs (the suite, or a design's own), printed as the table: `run`'s status."""
    try:
        with getattr(args, "watch", None) or contextlib.nullcontext():
            rows = rows_of()
    except KeyboardInterrupt:
        raise
    except CallHung as error:  # the scheduler model-checked did not answer
        print(not_answered(args, str(error)), file=sys.stderr)
        return exits.CRASHED
    except Exception as error:  # the scheduler model-checked raised, or is not a plain-protocol object
        if exits.interrupted(error):
            raise KeyboardInterrupt from None
        who = f"--scheduler {args.scheduler!r}" if args.scheduler else "the proof suite"
        print(f"stallfree prove: {who} failed: {type(error).__name__}: {str(error)[:300]}", file=sys.stderr)
        return exits.CRASHED
    wide = max([36, *(len(row.method) for row in rows)])  # a long method widens its column, never overruns it
    print(f"{'claim':<20} {'method':<{wide}} {'bound':<28} {'result':<12} {'seconds':>8}")
    for row in rows:
        result = row.result.label if isinstance(row.result, Verdict) else row.result
        print(f"{row.claim:<20} {row.method:<{wide}} {row.bound:<28} {result:<12} {row.seconds:>8.2f}")
    failed = [row for row in rows if row.failed]
    for row in [row for row in rows if row.failed or row.result == Verdict.NOT_JUDGED]:
        print(f"\n{row.claim} ({row.method}): {row.result.label}\n{row.detail}")
    try:
        write_json(args, [row.to_json() for row in rows])
    except ValueError as error:  # checked before the run, yet the write failed
        print(f"stallfree prove: {error}", file=sys.stderr)
        return exits.USAGE
    print("\n" + summary(rows))
    return exits.BROKEN if failed else exits.HOLDS


def not_answered(args: argparse.Namespace, why: str) -> str:
    """The line of a --scheduler call that did not return (the countdown's, or the watchdog's outside)."""
    return f"{checked(args)} did not answer: {why}"


def checked(args: argparse.Namespace) -> str:
    """The start of a line about the --scheduler checked."""
    return f"stallfree prove: --scheduler {args.scheduler!r}"


def summary(rows: list) -> str:  # type: ignore[type-arg]
    """How many claims hold, are not refuted (searched, nothing found: not proved), do not hold or are
    undecided, and are not applicable; only proved claims are counted as holding."""
    counts = {verdict: sum(row.result == verdict for row in rows) for verdict in Verdict}
    not_applicable = sum(str(row.result).startswith("n/a") for row in rows)
    judged = len(rows) - not_applicable
    text = f"{counts[Verdict.HOLDS]} of {judged} claims hold"
    if counts[Verdict.NOT_REFUTED]:
        text += f"; {counts[Verdict.NOT_REFUTED]} not refuted (searched, no counterexample, nothing proved)"
    if counts[Verdict.BROKEN]:
        text += f"; {counts[Verdict.BROKEN]} broken"
    if counts[Verdict.UNKNOWN]:
        text += f"; {counts[Verdict.UNKNOWN]} unknown"
    if counts[Verdict.NOT_JUDGED]:
        text += f"; {counts[Verdict.NOT_JUDGED]} not judged (vacuous at a bound, or not run)"
    if not_applicable:
        text += f"; {not_applicable} not applicable"
    return text
