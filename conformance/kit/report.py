"""Reports of a conformance run, for people: one verdict per rule, then each counterexample with what
happened, what the rule requires, the minimal workload as JSON and as a ready-to-paste pytest test."""

from __future__ import annotations

import hashlib
import json

from stallfree.spec import Workload
from stallfree.spec.utils.loader import import_line
from stallfree.spec.verdict import Judgement, Verdict

from ..isolation.outcome import TIMEOUT
from .check import FAIL, NOT_JUDGED, PASS, Counterexample, Report

RULE_WIDTH = 16


def render(report: Report) -> str:
    lines = [header(report), ""]
    for rule, verdict in report.verdicts.items():
        lines.append(verdict_line(report, rule, verdict))
    for rule, c in report.counterexamples.items():
        if rule not in report.verdicts:
            lines.append(Judgement(rule, Verdict.BROKEN, f"at step {c.step}: {c.message}").line(RULE_WIDTH))
    if report.skipped:
        lines.append("\nnot supported by the target, so skipped (not judged, not passed):")
        lines += [f"  {line}" for line in report.skipped]
    if report.ended_early:
        lines.append(f"\nexploration ended early: {report.ended_early}")
    for config, why in report.refused.items():
        lines.append(f"config refused by the factory, skipped: {config}: {why}")
    for note in report.notes:
        lines.append(f"note: {note}")
    for c in report.counterexamples.values():
        lines += ["", *counterexample_lines(report.target, c)]
    lines += ["", summary(report)]
    return "\n".join(lines)


def header(report: Report) -> str:
    claim = f"profile {report.profile}" if report.profile else f"rules {','.join(report.checked)}"
    return (
        f"stallfree conform {report.target}: {claim}; {len(report.shapes)} config(s) x {report.examples} "
        f"examples, seed {report.seed}\n{report.runs} runs, {report.steps} steps judged, {report.seconds:.1f} s"
    )


def verdict_line(report: Report, rule: str, verdict: Verdict) -> str:
    if verdict == FAIL:
        c = report.counterexamples[rule]
        return Judgement(rule, verdict, f"at step {c.step}: {c.message}").line(RULE_WIDTH)
    if rule in report.not_applicable:
        return Judgement(rule, verdict, report.not_applicable[rule]).line(RULE_WIDTH)
    if verdict == NOT_JUDGED and rule in report.unexercised:
        return Judgement(rule, verdict, f"({report.unexercised[rule]})").line(RULE_WIDTH)
    if verdict == NOT_JUDGED:
        return Judgement(rule, verdict, f"({report.ended_early or 'the exploration stopped first'})").line(RULE_WIDTH)
    if verdict == PASS:
        count, noun = report.exercised.get(rule, (0, ""))
        runs = f"{report.runs} runs; {count} {noun}" if count else f"{report.runs} runs"
        partial = f"; partial: {report.partial[rule]}" if rule in report.partial else ""
        return Judgement(rule, verdict, f"({runs}{partial})").line(RULE_WIDTH)
    return Judgement(rule, verdict).line(RULE_WIDTH)


def summary(report: Report) -> str:
    broken = [r for r in report.counterexamples]
    if not broken and report.refused and len(report.refused) == len(report.shapes):
        return "nothing judged: the factory refused every config"
    if not broken:
        partial = f"; {len(report.partial)} of them in part, as their lines say" if report.partial else ""
        skipped = f"; {len(report.skipped)} capability test set(s) skipped" if report.skipped else ""
        counts = f"{len(report.checked)} of {len(report.verdicts)} rules checked"
        if report.unexercised:
            held = sum(v == PASS for v in report.verdicts.values())
            return (f"no checked rule broken: {held} held, {len(report.unexercised)} not judged (never exercised: "
                    f"{', '.join(report.unexercised)}) ({counts}{partial}{skipped})")
        return f"every checked rule held ({counts}{partial}{skipped})"
    return f"broken: {', '.join(broken)}"


def counterexample_lines(target: str, c: Counterexample) -> list[str]:
    shrunk = f"1-minimal after {c.shrink_runs} shrink runs" if c.minimal else (
        f"shrinking stopped at its limit after {c.shrink_runs} runs: small, maybe not minimal")
    lines = [
        f"== {c.rule} broken ==",
        f"step:      {c.step}",
        f"call:      {c.call}",
        f"happened:  {c.message}",
        f"requires:  {c.requires}",
    ]
    if c.traceback:
        lines += ["traceback (the target's frames):", *("    " + t for t in c.traceback.rstrip().splitlines())]
    lines += [
        f"minimal workload ({shrunk}); save it and replay it with",
        f"  stallfree trace --scheduler {target} --workload FILE"
        + ("" if c.contract is None else f" --contract {c.contract}"),
        workload_json(c.workload),
        "as a pytest test:",
        pytest_test(target, c),
    ]
    return lines


def workload_json(w: Workload) -> str:
    """The workload as JSON, one request a line."""
    data = w.to_json()
    requests = ",\n".join(f"    {json.dumps(r)}" for r in data["requests"])
    budgets = f',\n "budgets": {json.dumps(data["budgets"])}' if "budgets" in data else ""
    cancels = ",\n".join(f"    {json.dumps(c)}" for c in data.get("cancels", []))
    more = f',\n "cancels": [\n{cancels}\n ]' if cancels else ""
    return f'{{"config": {json.dumps(data["config"])},\n "requests": [\n{requests}\n ]{budgets}{more}}}'


def pytest_test(target: str, c: Counterexample) -> str:
    """A test that fails while the scheduler breaks the rule on this workload, and passes once fixed."""
    statement, factory = import_line(target)
    name = printed_test_name(c)
    constant = "COUNTEREXAMPLE_" + name.upper().replace("_MINIMAL_COUNTEREXAMPLE", "")  # COUNTEREXAMPLE_FCFS_23F6BCC9
    rules = list(c.rules)
    hang = ""
    contract = "" if c.contract is None else f", contract={json.dumps(c.contract)}"
    if c.rule == TIMEOUT:
        hang = f"    # this workload hung a call of the target ({c.call}) under stallfree conform\n"
    return (
        f"from stallfree.conformance import check_workload\n"
        f"from stallfree.spec import Workload\n"
        f"{statement}\n\n"
        f'{constant} = """\n{workload_json(c.workload)}\n"""\n\n\n'
        f"def test_{name}() -> None:\n"
        f'    """{c.rule} at step {c.step}: {_docstring(c.message)}"""\n'
        f"{hang}"
        f"    check_workload(Workload.loads({constant}), {factory}, rules={json.dumps(rules)}{contract})"
    )


def printed_test_name(c: Counterexample) -> str:
    """`RULE_minimal_counterexample_HASH`: the rule, and 8 hex digits of a hash of the rule, the contract and
    the workload, so that printed tests pasted into one file keep their own names and workloads."""
    rule = c.rule.lower().replace("-", "_")
    facts = json.dumps([c.rule, c.contract, c.workload.to_json()], sort_keys=True, separators=(",", ":"))
    return f"{rule}_minimal_counterexample_{hashlib.sha256(facts.encode()).hexdigest()[:8]}"


def _docstring(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"""', "'''")
