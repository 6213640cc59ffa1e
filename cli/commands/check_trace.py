"""`stallfree check-trace FILE.jsonl`: judge an engine's trace (JSON Lines, see
stallfree.conformance.trace.tracefile) against every rule, from the trace alone, streaming."""

from __future__ import annotations

import argparse
import errno
import sys
from pathlib import Path
from typing import IO, Any

from stallfree.spec import RULE_IDS, RuleViolation
from stallfree.spec.verdict import Judgement, Verdict, any_broken, as_json, lines

from .. import exits
from .args import add_output_arguments, check_distinct, check_json, rule_list, shows_progress, write_json

NAME = "check-trace"
HELP = "check a JSON Lines trace of any engine against the rules (streaming; '-' reads stdin)"
RULE_WIDTH = 16
PROGRESS = "PROGRESS"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE.jsonl", help="the trace; '-' for stdin")
    claim = p.add_mutually_exclusive_group()
    claim.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID", help="check only these rules")
    claim.add_argument("--profile", default=None, help="check a profile: safety or full (the default)")
    p.add_argument("--all", action="store_true",
                   help="after a broken rule, read the trace again without it, to find every broken rule")
    add_output_arguments(p, "the verdicts")


def run(args: argparse.Namespace) -> int:
    from stallfree.conformance.kit.profiles import checked_rules, contract_of
    from stallfree.conformance.trace.tracecheck import TraceVerdict, check_trace, read_lines
    from stallfree.conformance.trace.tracefile import TraceError
    from stallfree.spec import registry

    try:
        checked = checked_rules(args.rules, args.profile)
        contract = contract_of(args.profile)
        if contract.is_design:  # a trace file's steps are judged by the reservation design's monitor; an
            contract = registry.RESERVATION  # engine's trace (format v2) by its own checker, of the IDs checked
    except ValueError as error:
        return fail(f"--profile: {error}")
    if args.all and args.file == "-":
        return fail("--all reads the trace more than once: give a file, not '-'")
    try:
        check_json(args)
        check_distinct([("FILE", None if args.file == "-" else Path(args.file))], [("--json", args.json)])
    except ValueError as error:
        return fail(str(error))
    show = shows_progress(args)

    def progress(line: str) -> None:
        if show:
            print(f"check-trace: {line}", file=sys.stderr, flush=True)

    verdicts: list[TraceVerdict] = []
    rules = checked
    try:
        while True:
            with open_trace(args.file) as stream:
                verdict = check_trace(read_lines(stream), rules, progress, contract)
            verdicts.append(verdict)
            broken = verdict.violation
            if not args.all or broken is None or broken.rule not in rules:
                break
            rules = tuple(r for r in rules if r != broken.rule)
            if not rules:
                break
    except TraceError as error:
        return fail(f"{args.file}: {error}")
    except OSError as error:
        return fail(f"{args.file}: {error.strerror or error}")
    except UnicodeDecodeError as error:
        return fail(f"{args.file}: not UTF-8 text: {error}")
    judged = judge(checked, verdicts, contract.ids)
    report = summarise(args.file, judged, verdicts)
    print(render(report, judged))
    try:
        write_json(args, report)
    except ValueError as error:  # checked before the run, yet the write failed
        return fail(str(error))
    if not report["ok"]:
        return exits.BROKEN
    return exits.NOTHING_JUDGED if report["steps"] == 0 else exits.HOLDS


def open_trace(name: str) -> IO[bytes]:
    if name == "-":
        if sys.stdin is None or sys.stdin.closed:  # started with stdin closed (`<&-`): nothing to read
            raise OSError(errno.EBADF, "standard input is closed")
        try:
            return open(sys.stdin.fileno(), "rb", closefd=False)
        except (OSError, ValueError) as error:  # a descriptor that is not there, or not a file
            raise OSError(errno.EBADF, f"standard input cannot be read ({error})") from None
    return open(name, "rb")


def judge(checked: tuple[str, ...], verdicts: list[Any], registry: tuple[str, ...] = RULE_IDS) -> list[Judgement]:
    """Every rule of `registry` (the reference's, or a variant contract's IDs): holds (with the steps
    read), broken (first violation, its step and line), not checked,
    or not judged: a rule the trace stopped being read for (an unlisted problem came first), or
    PROGRESS on a trace without its end line, which may have been cut off mid-run."""
    broken: dict[str, tuple[RuleViolation, int | None]] = {}
    for v in verdicts:
        if v.violation is not None:
            broken[v.violation.rule] = (v.violation, v.violation_line)
        for rule, found in getattr(v, "violations", {}).items():  # a v2 trace: every rule's first break
            broken.setdefault(rule, found)
    last = verdicts[-1]
    stops_at_first = not hasattr(last, "violations")  # v1: the reading stops at the first break
    judged = []
    for rule in (*registry, *[r for r in broken if r not in registry]):
        if rule in broken:
            violation, line = broken[rule]
            facts = (("step", violation.step), ("line", line), ("happened", violation.message))
            detail = f"at step {violation.step} (line {line}): {violation.message}"
            judged.append(Judgement(rule, Verdict.BROKEN, detail, facts))
        elif rule not in checked:
            judged.append(Judgement(rule, Verdict.NOT_CHECKED))
        elif stops_at_first and last.violation is not None and last.violation.rule not in checked:
            until = last.violation.step
            detail = f"(held until step {until}, where {last.violation.rule} stopped the reading)"
            judged.append(Judgement(rule, Verdict.NOT_JUDGED, detail, (("until_step", until),)))
        elif rule == PROGRESS and not last.ended and (last.violation is None or not stops_at_first):
            why = (f"(no end line: the engine may have stopped mid-run, so whether every request finished is "
                   f"unknown; no stall in {last.steps} steps)")
            judged.append(Judgement(rule, Verdict.NOT_JUDGED, why, (("steps", last.steps),)))
        elif stops_at_first and last.violation is not None:
            judged.append(Judgement(rule, Verdict.NOT_JUDGED, f"(held until step {last.violation.step}, where "
                                    f"{last.violation.rule} broke; read again without it, give --all)",
                                    (("until_step", last.violation.step),)))
        elif rule in getattr(last, "not_judged", {}):  # the trace holds no fact the rule speaks of
            judged.append(Judgement(rule, Verdict.NOT_JUDGED, last.not_judged[rule]))
        elif last.steps == 0:  # a rule judged on no step has shown nothing
            judged.append(Judgement(rule, Verdict.NOT_JUDGED, "(the trace has no step)", (("steps", 0),)))
        else:
            partial = getattr(last, "partial", {}).get(rule)
            if partial is not None:  # judged on what the trace holds, which is not all the rule speaks of
                judged.append(Judgement(rule, Verdict.HOLDS, f"({last.steps} steps; partial: {partial})",
                                        (("steps", last.steps), ("partial", partial))))
            else:
                judged.append(Judgement(rule, Verdict.HOLDS, f"({last.steps} steps)", (("steps", last.steps),)))
    return judged


def summarise(name: str, judged: list[Judgement], verdicts: list[Any]) -> dict[str, Any]:
    first = verdicts[0]
    cfg = first.config
    seconds = sum(v.seconds for v in verdicts)
    steps = sum(v.steps for v in verdicts)
    return {
        "trace": name, "ok": not any_broken(judged),
        "not_judged": [j.claim for j in judged if j.verdict is Verdict.NOT_JUDGED],
        "config": {"token_budget": cfg.token_budget, "max_seqs": cfg.max_seqs, "kv_tokens": cfg.kv_tokens},
        "steps": max(v.steps for v in verdicts), "lines": max(v.lines for v in verdicts), "ended": verdicts[-1].ended,
        "seconds": round(seconds, 3), "steps_per_second": round(steps / seconds) if seconds else None,
        "rules": as_json(judged),
    }


def render(report: dict[str, Any], judged: list[Judgement]) -> str:
    cfg = report["config"]
    rate = f" ({report['steps_per_second']:,} steps/s)" if report["steps_per_second"] else ""
    end = "with its end line" if report["ended"] else "no end line: PROGRESS at the end not judged"
    head = (f"trace {report['trace']}: budget {cfg['token_budget']}, max_seqs {cfg['max_seqs']}, "
            f"kv_tokens {cfg['kv_tokens']}; {report['steps']} steps, {end}; {report['seconds']:.2f} s{rate}")
    return "\n".join([head, "", *lines(judged, RULE_WIDTH)])


def fail(message: str) -> int:
    print(f"stallfree check-trace: {message}", file=sys.stderr)
    return exits.USAGE
