"""`stallfree trace`: run a workload through the reference (or any scheduler) under the monitor
and print the step table and a verdict per rule."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from stallfree.conformance.isolation.remote import CallHung
from stallfree.spec import (
    Arrival,
    Cancel,
    Config,
    FieldTypeError,
    InvalidField,
    RuleViolation,
    StepFacts,
    Unsupported,
    Workload,
    play,
    registry,
)
from stallfree.spec.capability import CANCEL as CANCEL_CAPABILITY
from stallfree.spec.capability import supports
from stallfree.spec.contract import Contract
from stallfree.spec.examples import HAND_TRACE  # the contract's hand trace: --example hand
from stallfree.spec.reservation.facts import stops
from stallfree.spec.utils.alarm import Alarm
from stallfree.spec.verdict import CRASH, TIMEOUT, as_json, lines
from stallfree.spec.workload import BudgetChange
from stallfree.view import StepView
from stallfree.view.record import Offer
from stallfree.view.table import header, verdicts

from .. import exits
from ..explain import Nondeterministic, explain
from ..stepviews import add_view_arguments, check_view_arguments, pricing, wants_views, write_views
from .args import (
    FactoryError,
    add_output_arguments,
    budget_change,
    check_distinct,
    check_json,
    check_output_file,
    contract_of,
    in_place,
    output_path,
    path_error,
    positive_int,
    read_workload,
    request_spec,
    rule_list,
    seconds,
    write_json,
    write_output,
)
from .hosting import close, hosted, load_judged

NAME = "trace"


def compare_list(text: str) -> list[str]:
    from .trace_compare import policies

    return policies(text)

HELP = "run requests through a scheduler under the monitor; print the step table and rule verdicts"

# The variants' examples (docs/variants.md): a prompt chunked around decodes (aligned chunks), four
# streams and a budget dropped to 2 (rotation), a low-priority request amid high-priority ones (aging).
ALIGNED_TRACE = Workload(
    Config(token_budget=24, max_seqs=4, kv_tokens=256),
    (Arrival(0, 8, 6, 0), Arrival(1, 60, 3, 1), Arrival(2, 20, 2, 2)),
)
BUDGET_DROP = Workload(
    Config(token_budget=8, max_seqs=4, kv_tokens=256),
    tuple(Arrival(i, 2, 8, 0) for i in range(4)), (BudgetChange(2, 2), BudgetChange(10, 8)),
)
PRIORITY_STREAM = Workload(
    Config(token_budget=8, max_seqs=1, kv_tokens=256),
    (Arrival(0, 4, 8, 0, 0), Arrival(1, 4, 2, 0, 0), *(Arrival(2 + i, 4, 2, 1 + 2 * i, 3) for i in range(12))),
)
EXAMPLES = {
    "hand": HAND_TRACE, "aligned": ALIGNED_TRACE, "budget-drop": BUDGET_DROP, "priority-stream": PRIORITY_STREAM,
}


DEFAULT_SCHEDULER = "stallfree.reference:Scheduler"
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
                        help="a built-in workload (hand: the contract's hand trace; aligned, budget-drop, "
                             "priority-stream: the variants', docs/variants.md)")
    source.add_argument("--workload", type=Path, metavar="FILE", help="a JSON workload (see stallfree.spec.workload)")
    p.add_argument("--request", type=request_spec, action="append", default=[],
                   metavar="RID:PROMPT:MAX_NEW[@STEP][/PRIORITY]",
                   help="a request arriving before step STEP (default 0), with a priority under a priority "
                        "contract; repeatable")
    p.add_argument("--budget-at", type=budget_change, action="append", default=[], metavar="STEP:B",
                   help="set_budget(B) before step STEP (a budget-change contract); repeatable")
    p.add_argument("--contract", default=None, metavar="NAME",
                   help="judge under a variant's contract: aligned[-B], budget-change, rotation, aging[-A], priority, "
                        "static, or `reference` (default: the reference's, or the named variant's own)")
    p.add_argument("--budget", type=positive_int, default=None, help="token budget B (default 8)")
    p.add_argument("--max-seqs", type=positive_int, default=None, help="slots S (default 4)")
    p.add_argument("--kv", type=positive_int, default=None, help="KV capacity K in tokens (default 256)")
    p.add_argument("--scheduler", default=DEFAULT_SCHEDULER, metavar="NAME|MODULE:FACTORY",
                   help="the scheduler to trace: the reference (default), a policy or variant `simulate` names "
                   "(reference, prefill-first, unchunked, docs/variants.md) or any plain-protocol MODULE:FACTORY; "
                   "`paged` for stallfree.paged:Scheduler, judged by the paged monitor")
    p.add_argument("--compare", type=compare_list, default=None, metavar="A,B,...",
                   help="run several schedulers (names or MODULE:FACTORY) on the workload, each under its own "
                        "contract, and draw them side by side (--plot, --html: shared slider, play button)")
    p.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID", help="check only these rules")
    p.add_argument("--jsonl", type=Path, metavar="FILE",
                   help="also write the run as a JSON Lines trace, the format `stallfree check-trace` reads")
    add_view_arguments(p)
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"a step or add of the scheduler taking longer is a TIMEOUT (default {DEFAULT_TIMEOUT:g})")
    add_output_arguments(p, "the verdicts", quiet="no step table: the verdicts (and the views asked for) only")


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
    return Workload(Config(config["budget"], config["max_seqs"], config["kv"]), tuple(args.request),
                    tuple(args.budget_at))


def run(args: argparse.Namespace) -> int:
    try:
        workload = workload_from(args)
        if steps_needed(workload) > MAX_STEPS:
            source = f"--workload {str(args.workload)!r}" if args.workload else "--request"
            raise InvalidField(f"{source}: its requests may take up to {steps_needed(workload):,} steps; "
                               f"trace runs at most {MAX_STEPS:,} (check more with stallfree campaign or check-trace)")
        if args.compare is not None:
            return compare_run(args, workload)
        factory, _ = load_judged(policy_target(args.scheduler), args.scheduler, args.timeout)
        if args.budget_at and (args.example or args.workload):
            workload = replace(workload, budgets=tuple(sorted(args.budget_at, key=lambda c: c.step)))
        contract = contract_of(args.contract, args.scheduler, factory)
        if args.jsonl:
            check_output_file("--jsonl", args.jsonl)
        check_json(args)
        check_view_arguments(args)
        check_distinct([("--workload", args.workload)], [("--jsonl", args.jsonl), ("--json", args.json),
                                                         ("--plot", getattr(args, "plot", None)),
                                                         ("--html", getattr(args, "html", None))])
        if contract.drawer:  # a design with a step view of its own: its table, verdicts and view
            try:
                return trace_blocks(args, workload, factory, contract)
            finally:
                close(factory)
    except (InvalidField, FieldTypeError, ValueError, ImportError) as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    try:
        return judged(args, workload, factory, contract)
    finally:
        close(factory)


def judged(args: argparse.Namespace, workload: Workload, factory: Callable[..., Any], contract: Contract | None) -> int:
    """Runs the trace, its --jsonl written as it goes and kept once the run has been judged."""
    try:
        jsonl = PendingFile("--jsonl", args.jsonl) if args.jsonl else None
    except ValueError as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    keep = False
    try:
        status = trace(args, workload, factory, jsonl.out if jsonl else None, contract)
        keep = status != exits.USAGE
        return status
    finally:
        if jsonl is not None:
            jsonl.close(keep)


def compare_run(args: argparse.Namespace, workload: Workload) -> int:
    """--compare: the options that name one run are refused, the views checked, then the comparison."""
    from .trace_compare import compare

    single = [flag for flag, given in (("--scheduler", args.scheduler != DEFAULT_SCHEDULER), ("--jsonl", args.jsonl),
                                       ("--invariants", args.invariants), ("--json", args.json)) if given]
    if single:
        raise InvalidField(f"--compare draws several runs; {', '.join(single)} name(s) one: give it without them")
    check_view_arguments(args)
    return compare(args, workload, {name: policy_target(name) for name in args.compare})


class PendingFile:
    """An output file written as a run goes, under a temporary name beside it: renamed into place when
    the run has been judged, removed when it never was, so no half-written FILE is left. Through a
    symlink it writes the link's target; a device or FIFO is written in place, as the run goes."""

    def __init__(self, flag: str, path: Path) -> None:
        self.flag, self.path = flag, output_path(path)
        self.temporary: str | None = None
        try:
            if in_place(self.path):
                self.out: IO[str] = open(self.path, "w")  # noqa: SIM115 (closed by close())
                return
            fd, self.temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        except OSError as error:
            raise path_error(flag, path, error) from None
        self.out = os.fdopen(fd, "w")

    def close(self, keep: bool) -> None:
        self.out.close()
        if self.temporary is None:  # written in place
            return
        if keep:
            try:
                os.chmod(self.temporary, 0o644)
                os.replace(self.temporary, self.path)
                return
            except OSError as error:
                print(f"stallfree trace: {path_error(self.flag, self.path, error)}", file=sys.stderr)
        with contextlib.suppress(OSError):
            os.unlink(self.temporary)


def policy_target(name: str) -> str:
    """A policy `stallfree simulate` names (reference, prefill-first, unchunked) as MODULE:FACTORY."""

    policy = registry.policies().get(name)
    return name if policy is None else policy[0]


def write_broken_step(writer: Any, view: StepView | None, num_written: int, budget: int) -> None:
    """The step a rule broke in, as the last step line of the trace, so that check-trace of the file
    breaks the same rule there. A step broken by a check of its plan never ran: its line has the plan,
    and nothing emitted or finished (the plan's checks come first, so nothing else is judged on it)."""
    if view is None or view.step != num_written:
        return
    writer.step(view.step, view.plan, view.emitted, view.finished,
                budget=view.budget if view.budget != budget else None)


def trace(
    args: argparse.Namespace, workload: Workload, factory: Callable[..., Any], jsonl: IO[str] | None,
    contract: Contract = registry.RESERVATION,
) -> int:
    from stallfree.conformance.trace.tracefile import TraceWriter

    cfg = workload.config
    writer = TraceWriter(jsonl, cfg, {"scheduler": args.scheduler}) if jsonl is not None else None
    price = pricing(args)
    table = quiet if getattr(args, "quiet", False) else print  # the step table's lines, kept or dropped
    head(args, cfg, price, table)

    def on_offer(offer: Offer) -> None:
        alarm.rearm()
        if writer is not None:
            a = offer.arrival
            writer.offered(a.rid, a.prompt_len, a.max_new, offer.accepted, a.priority)

    def on_cancel(c: Cancel, accepted: bool, pending: bool) -> None:
        alarm.rearm()
        when = "while its plan ran" if pending else "before it"
        table(f"{'':>5}  cancel({c.rid}) at step {c.step}, {when}: {'accepted' if accepted else 'refused'}")
        if writer is not None and accepted:
            writer.cancelled(c.rid, pending)

    budgets = [cfg.token_budget]  # the budget in force at the last step written

    def on_step(view: StepView, facts: StepFacts) -> None:
        alarm.rearm()
        steps_done[0] = facts.step + 1
        budget = view.budget  # set_budget() may have changed it before this step
        if facts.stopped:
            table(f"{'':>5}  stopped: {' '.join(f'r{rid}' for rid in stops(facts))}")
        if writer is not None:
            changed = budget if budget != budgets[-1] else None
            writer.step(facts.step, facts.plan, facts.emitted, [t.rid for t in facts.finished], stops(facts),
                        budget=changed)
        budgets.append(budget)

    steps_done = [0]  # steps judged, for a run stopped by the watchdog
    alarm = watchdog(None if hosted(factory) else args.timeout)  # a hosted scheduler's calls are timed by its link
    try:
        with alarm:
            done = explain(workload, factory, args.rules, args.scheduler, table, price,
                           getattr(args, "keep_going", False), on_step, on_offer, keep=wants_views(args),
                           contract=contract, on_cancel=on_cancel)
    except Unsupported as error:  # the workload stops or cancels; this scheduler cannot be told so
        print(f"stallfree trace: {error}; the workload needs it", file=sys.stderr)
        return exits.USAGE
    except (FactoryError, Nondeterministic, InvalidField) as error:  # InvalidField: a budget schedule or
        # priorities, and no contract for them
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    except (Hung, CallHung) as error:  # the scheduler did not answer: no rule judged it, and the run cannot go on
        return report_hung(args, workload, contract, steps_done[0], error)
    if writer is not None:
        finish_trace_file(writer, done.recording, budgets)
    return report_run(args, workload, contract, done, price)


def report_hung(
    args: argparse.Namespace, workload: Workload, contract: Contract, steps_done: int, error: Hung,
) -> int:
    """The verdicts of a run whose scheduler did not answer after `steps_done` steps: TIMEOUT, no rule judged."""
    judged = verdicts(args.rules or list(contract.ids), steps_done, None, 0, (), str(error), TIMEOUT,
                      registry=contract.rules)
    print()
    for line in lines(judged):
        print(line)
    write_json(args, {"scheduler": args.scheduler, "config": workload.to_json()["config"],
                      "rules": as_json(judged)})
    print(f"stallfree trace: {args.scheduler} did not answer: {error}", file=sys.stderr)
    return exits.CRASHED


def finish_trace_file(writer: Any, recording: Any, budgets: list[int]) -> None:
    """Writes the step a rule broke on, and the end line of a run that ended; `budgets[-1]` is the budget
    in force at the last step written."""
    stats, violation = recording.stats, recording.violation
    if violation is not None:
        write_broken_step(writer, recording.broken_step, len(budgets) - 1, budgets[-1])
    # A run stopped by a broken rule, or still pending at the work bound, has no end line: it did
    # not end (as record_trace writes it).
    if stats is not None and stats.stopped_at_bound is None:
        writer.end()


def report_run(args: argparse.Namespace, workload: Workload, contract: Contract, done: Any, price: Any) -> int:
    """Prints the verdicts, notes and views of a finished run, writes its JSON, and gives its exit status."""
    recording = done.recording
    stats, violation = recording.stats, recording.violation
    crash = violation if violation is not None and violation.rule == CRASH else None
    steps = stats.steps if stats is not None else recording.num_steps
    adds = stats.adds if stats is not None else len(recording.offers)
    judged = verdicts(done.checked, steps, violation, adds, done.broken,
                      registry=contract.rules,
                      unjudged=unjudged_rules(workload, recording.target))
    print()
    if not contract.is_design:
        print(f"contract {contract.name} (docs/variants.md)")
    for line in lines(judged):
        print(line)
    note = free_kv_note(recording.target)
    if note:
        print(f"note: {note}")
    if stats is not None and stats.stopped_at_bound is not None:
        print(f"note: work still pending after {stats.stopped_at_bound} steps (PROGRESS not checked)")
    try:
        for line in write_views(args, recording, price, done.broken):
            print(line)
    except ValueError as error:  # checked before the run, yet a write failed
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    write_json(args, {"scheduler": args.scheduler, "config": workload.to_json()["config"],
                      "rules": as_json(judged)})
    if crash is not None:
        print(f"stallfree trace: {args.scheduler} raised: {crash.message}", file=sys.stderr)
        return exits.CRASHED
    return exits.BROKEN if violation or done.broken else exits.HOLDS


def head(args: argparse.Namespace, cfg: Config, price: Any, table: Callable[[str], None]) -> None:
    """The run's config and scheduler, the cost model if priced, and the step table's header (`table`)."""
    print(f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}; "
          f"scheduler {args.scheduler}")
    if price is not None:
        print(f"ms: {price.describe()}")
    table(header(cfg.token_budget, with_ms=price is not None))


def unjudged_rules(workload: Workload, scheduler: object) -> dict[str, str]:
    """Rules this run cannot judge: CANCEL for a scheduler with no cancel(rid) on a workload that cancels
    nothing (no cancel was ever offered, so no step could break it: not a hold)."""
    if workload.cancels or scheduler is None or CANCEL_CAPABILITY in supports(scheduler):
        return {}
    return {"CANCEL": "(the scheduler has no cancel(rid) and the workload cancels nothing)"}


def quiet(line: str) -> None:
    """--quiet: a line of the step table, dropped."""


def free_kv_note(scheduler: object) -> str:
    """A `free_kv` the monitor cannot read is said, not silently passed over (rule KV then checks only
    the reservations it follows itself)."""
    free_kv = getattr(scheduler, "free_kv", None)
    if free_kv is None or type(free_kv) is int:
        return ""
    return f"the scheduler's free_kv is {type(free_kv).__name__} {free_kv!r:.40}, not an int: not compared"


class Hung(BaseException):
    """No step (or add) of the scheduler finished within the timeout. A BaseException, so that no
    handler for the scheduler's own errors (which are Exceptions) takes it for one of them."""


def watchdog(seconds: float | None) -> Alarm:
    """SIGALRM after `seconds` without a step or an add: a scheduler stuck in Python code (a loop, a
    sleep) is stopped there and reported as TIMEOUT, not waited for. Rearmed by each step and add;
    called from another thread than the main one, trace runs without a watchdog."""
    return Alarm(seconds, lambda: Hung(f"no step finished within {seconds:g} s (--timeout)"))


def refuse_reservation_outputs(args: argparse.Namespace) -> None:
    """Raises naming the flag when a run in blocks asks for an output only the reservation design has."""
    if args.jsonl:
        raise ValueError("--jsonl: the trace format has no preemption events; it records the reservation design only")
    drawn = [f"--{name}" for name in ("invariants", "ms") if getattr(args, name, None)]
    if drawn:
        raise ValueError(f"{', '.join(drawn)}: the reservation design's views; a paged trace prints its step table "
                         "and draws it with --plot and --html")


def trace_blocks(args: argparse.Namespace, workload: Workload, factory: Callable[..., Any], contract: Contract) -> int:
    """The step table (free blocks, preemptions, cache hits) and verdicts of a design drawn by the paged
    step view (`contract.drawer`: the paged and prefix designs), and with --plot and --html its view.
    The --invariants and --ms views are the reservation design's: refused. A hosted target's calls are
    timed by its link (--timeout), a hang exit 3 naming the call; stallfree's own runs without."""
    from stallfree.view.paged import HEADER, PagedRecorder, row, workload_verdicts
    from stallfree.view.raised import Witnessed

    refuse_reservation_outputs(args)
    checked = [r.id for r in contract.select(args.rules)]  # raises naming an ID the design does not hold
    cfg = workload.config
    print(f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}; "
          f"scheduler {args.scheduler} ({contract.name} design)")
    print(HEADER)
    recorder = PagedRecorder(workload, args.scheduler, contract.name)

    def on_step(monitor: Any, facts: Any) -> None:
        recorder.on_step(monitor, facts)
        steps_done[0] = facts.step + 1
        print(row(facts, cfg.token_budget, monitor.shadow.free_blocks))
        if facts.preempted:
            victims = " ".join(f"r{t.rid}" for t in facts.preempted)
            print(f"{'':>5}  preempted: {victims} (blocks freed, back at the head)")
        for rid, cached in getattr(facts, "claimed", {}).items():
            if cached:
                print(f"{'':>5}  hit: r{rid} holds {cached} cached token(s); its chunk starts at {cached}")

    def on_add(a: Any, accepted: bool) -> None:
        recorder.on_add(a, accepted)
        if not accepted:
            print(f"{'':>5}  refused: add({a.rid}, {a.prompt_len}, {a.max_new})")

    violation, steps, adds, steps_done = None, 0, 0, [0]
    witnessed = Witnessed(factory)  # tells the scheduler's own crash from an error of the command's
    try:
        stats = play(workload, witnessed, checked, on_step=on_step, on_add=on_add, contract=contract)
        steps, adds = stats.steps, stats.accepted + stats.refused
    except RuleViolation as error:
        violation = error
    except FactoryError as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    except CallHung as error:  # a hosted scheduler did not answer: no rule judged it, and the run cannot go on
        return report_hung(args, workload, contract, steps_done[0], error)
    except Exception as error:  # the scheduler raised: its crash, judged as the reservation design's is
        crash = witnessed.crash(error)
        if crash is None:
            raise  # not the scheduler's: an internal error
        violation = RuleViolation(CRASH, steps_done[0], crash)
        print(f"{'':>5}  ^ the scheduler raised at step {violation.step}: {crash}")
    print()
    judged = workload_verdicts(checked, steps, violation, adds, contract.rules)
    for line in lines(judged):
        print(line)
    recorder.violation = violation
    status = draw_blocks(args, recorder, contract, workload, judged, violation)
    if violation is not None and violation.rule == CRASH and status != exits.USAGE:
        print(f"stallfree trace: {args.scheduler} raised: {violation.message}", file=sys.stderr)
        return exits.CRASHED
    return status


def draw_blocks(args: argparse.Namespace, recorder: Any, contract: Contract, workload: Workload, judged: Any,
                violation: Any) -> int:
    """--plot, --html and --json of a run in blocks; the exit status of its verdicts."""
    from stallfree.view.paged import paged_page, plot_paged

    try:
        if getattr(args, "plot", None) is not None:
            try:
                print(f"plot: {plot_paged(recorder, args.plot)}")
            except OSError as error:
                raise path_error("--plot", args.plot, error) from None
        if getattr(args, "html", None) is not None:
            write_output("--html", args.html, paged_page(recorder))
            print(f"html: {args.html}")
        write_json(args, {"scheduler": args.scheduler, "design": contract.name, "config": workload.to_json()["config"],
                          "rules": as_json(judged)})
    except ValueError as error:  # checked before the run, yet the write failed
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    return exits.BROKEN if violation else exits.HOLDS
