"""`stallfree check-trace FILE.jsonl`: judge an engine's trace (JSON Lines, see
stallfree.conformance.trace.tracefile) against every rule, from the trace alone, streaming."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import IO, Any

from stallfree.spec import RULE_IDS, RuleViolation

from .args import check_output_file, rule_list, write_output

NAME = "check-trace"
HELP = "check a JSON Lines trace of any engine against the rules (streaming; '-' reads stdin)"
RULE_WIDTH = 16


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE.jsonl", help="the trace; '-' for stdin")
    claim = p.add_mutually_exclusive_group()
    claim.add_argument("--rules", type=rule_list, default=None, metavar="ID,ID", help="check only these rules")
    claim.add_argument("--profile", default=None, help="check a profile: safety or full (the default)")
    p.add_argument("--all", action="store_true",
                   help="after a broken rule, read the trace again without it, to find every broken rule")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the verdicts as JSON to FILE")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run(args: argparse.Namespace) -> int:
    from stallfree.conformance.kit.profiles import checked_rules
    from stallfree.conformance.trace.tracecheck import TraceVerdict, check_trace, read_lines
    from stallfree.conformance.trace.tracefile import TraceError

    try:
        checked = checked_rules(args.rules, args.profile)
    except ValueError as error:
        return fail(f"--profile: {error}")
    if args.all and args.file == "-":
        return fail("--all reads the trace more than once: give a file, not '-'")
    if args.json is not None:
        try:
            check_output_file("--json", args.json)
        except ValueError as error:
            return fail(str(error))

    def progress(line: str) -> None:
        if not args.quiet:
            print(f"check-trace: {line}", file=sys.stderr, flush=True)

    verdicts: list[TraceVerdict] = []
    rules = checked
    try:
        while True:
            with open_trace(args.file) as stream:
                verdict = check_trace(read_lines(stream), rules, progress)
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
    report = summarise(args.file, checked, verdicts)
    print(render(report))
    if args.json is not None:
        try:
            write_output("--json", args.json, json.dumps(report, indent=2) + "\n")
        except ValueError as error:  # checked before the run, yet the write failed
            return fail(str(error))
    return 0 if report["ok"] else 1


def open_trace(name: str) -> IO[bytes]:
    if name == "-":
        return open(sys.stdin.fileno(), "rb", closefd=False)
    return open(name, "rb")


def summarise(name: str, checked: tuple[str, ...], verdicts: list[Any]) -> dict[str, Any]:
    """Every rule: holds (with the steps read), broken (first violation, its step and line), or not checked."""
    first = verdicts[0]
    broken: dict[str, tuple[RuleViolation, int | None]] = {}
    for v in verdicts:
        if v.violation is not None:
            broken[v.violation.rule] = (v.violation, v.violation_line)
        for rule, found in getattr(v, "violations", {}).items():  # a v2 trace: every rule's first break
            broken.setdefault(rule, found)
    last = verdicts[-1]
    rules: dict[str, Any] = {}
    for rule in (*RULE_IDS, *[r for r in broken if r not in RULE_IDS]):
        if rule in broken:
            violation, line = broken[rule]
            rules[rule] = {"verdict": "fail", "step": violation.step, "line": line, "happened": violation.message}
        elif rule not in checked:
            rules[rule] = {"verdict": "not checked"}
        elif last.violation is not None and last.violation.rule not in checked:
            rules[rule] = {"verdict": "not judged", "until_step": last.violation.step}
        else:
            rules[rule] = {"verdict": "pass", "steps": last.steps}
            if rule in getattr(last, "partial", {}):
                rules[rule]["partial"] = last.partial[rule]
    cfg = first.config
    seconds = sum(v.seconds for v in verdicts)
    steps = sum(v.steps for v in verdicts)
    return {
        "trace": name, "ok": not broken,
        "config": {"token_budget": cfg.token_budget, "max_seqs": cfg.max_seqs, "kv_tokens": cfg.kv_tokens},
        "steps": max(v.steps for v in verdicts), "lines": max(v.lines for v in verdicts), "ended": last.ended,
        "seconds": round(seconds, 3), "steps_per_second": round(steps / seconds) if seconds else None,
        "rules": rules,
    }


def render(report: dict[str, Any]) -> str:
    cfg = report["config"]
    rate = f" ({report['steps_per_second']:,} steps/s)" if report["steps_per_second"] else ""
    end = "with its end line" if report["ended"] else "no end line: PROGRESS at the end not judged"
    lines = [
        f"trace {report['trace']}: budget {cfg['token_budget']}, max_seqs {cfg['max_seqs']}, "
        f"kv_tokens {cfg['kv_tokens']}; {report['steps']} steps, {end}; "
        f"{report['seconds']:.2f} s{rate}",
        "",
    ]
    for rule, v in report["rules"].items():
        if v["verdict"] == "fail":
            lines.append(f"{rule:<{RULE_WIDTH}} BROKEN at step {v['step']} (line {v['line']}): {v['happened']}")
        elif v["verdict"] == "pass" and "partial" in v:
            lines.append(f"{rule:<{RULE_WIDTH}} holds ({v['steps']} steps; partial: {v['partial']})")
        elif v["verdict"] == "pass":
            lines.append(f"{rule:<{RULE_WIDTH}} holds ({v['steps']} steps)")
        elif v["verdict"] == "not judged":
            lines.append(f"{rule:<{RULE_WIDTH}} not judged (held until step {v['until_step']})")
        else:
            lines.append(f"{rule:<{RULE_WIDTH}} not checked")
    return "\n".join(lines)


def fail(message: str) -> int:
    print(f"stallfree check-trace: {message}", file=sys.stderr)
    return 2
