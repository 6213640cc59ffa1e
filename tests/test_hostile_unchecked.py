"""Every way a rule can be left unchecked, each shown not to read "holds": left out of the selection,
stopped short by another broken rule, a crash, a hang or a protocol error, never reached (no step
ran), a trace cut off before its end line, a search that found nothing, a solver with no answer.

Each case names the command, the input that leaves the rule unchecked, and the verdict it must read
instead; the last test checks that every verdict short of "holds" is met by some case."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import call

from stallfree.spec.verdict import Verdict

FAULT = "stallfree.faults.catalog:FreeDecodes"  # breaks BUDGET
HOSTILE = "hostile_schedulers"


def hand_trace(tmp: Path, capsys: pytest.CaptureFixture[str], scheduler: str = "stallfree.reference:Scheduler") -> Path:
    path = tmp / "t.jsonl"
    call(["trace", "--example", "hand", "--scheduler", scheduler, "--jsonl", str(path)], capsys)
    return path


def cut(tmp: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = hand_trace(tmp, capsys)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:4]))
    return path


def protocol_stop(tmp: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = hand_trace(tmp, capsys)
    lines = path.read_text().splitlines()
    step = json.loads(lines[2])
    step["finished"] = [77]  # a rid never added: a PROTOCOL error, no rule's
    lines[2] = json.dumps(step)
    path.write_text("\n".join(lines) + "\n")
    return path


def over_budget(tmp: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = hand_trace(tmp, capsys)
    lines = path.read_text().splitlines()
    step = json.loads(lines[2])
    step["plan"][-1][1] += 1  # one token past the budget of 8: BUDGET broken at step 1
    lines[2] = json.dumps(step)
    path.write_text("\n".join(lines) + "\n")
    return path


def no_step(tmp: Path) -> Path:
    path = tmp / "empty.jsonl"
    path.write_text('{"stallfree_trace": 1, "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64}}\n'
                    '{"end": true}\n')
    return path


Case = tuple[str, Callable[[Path, pytest.CaptureFixture[str]], list[str]], str, Verdict, str]

CASES: list[Case] = [
    ("trace: left out of --rules", lambda t, c: ["trace", "--example", "hand", "--rules", "BUDGET"],
     "FCFS", Verdict.NOT_CHECKED, ""),
    ("trace: another rule broke first", lambda t, c: ["trace", "--example", "hand", "--scheduler", FAULT],
     "FCFS", Verdict.NOT_JUDGED, r"held until step \d+, where BUDGET broke"),
    ("trace: the scheduler crashed", lambda t, c: ["trace", "--example", "hand", "--scheduler",
                                                   f"{HOSTILE}:RaisesInComplete"],
     "BUDGET", Verdict.NOT_JUDGED, "where CRASH stopped the run"),
    ("trace: a protocol error", lambda t, c: ["trace", "--example", "hand", "--scheduler", f"{HOSTILE}:GarbagePlan"],
     "BUDGET", Verdict.NOT_JUDGED, "where PROTOCOL broke"),
    ("trace: no step ran", lambda t, c: ["trace", "--kv", "10", "--request", "1:9:9"],
     "BUDGET", Verdict.NOT_JUDGED, r"\(no step ran\)"),
    ("check-trace: left out of --profile safety", lambda t, c: ["check-trace", str(hand_trace(t, c)),
                                                                "--profile", "safety"],
     "FCFS", Verdict.NOT_CHECKED, ""),
    ("check-trace: no end line", lambda t, c: ["check-trace", str(cut(t, c))],
     "PROGRESS", Verdict.NOT_JUDGED, "no end line"),
    ("check-trace: a protocol error stopped the reading", lambda t, c: ["check-trace", str(protocol_stop(t, c))],
     "BUDGET", Verdict.NOT_JUDGED, "where PROTOCOL stopped the reading"),
    ("check-trace: another rule broke first", lambda t, c: ["check-trace", str(over_budget(t, c))],
     "FCFS", Verdict.NOT_JUDGED, "where BUDGET broke; read again without it, give --all"),
    ("check-trace: no step in the trace", lambda t, c: ["check-trace", str(no_step(t))],
     "BUDGET", Verdict.NOT_JUDGED, r"\(the trace has no step\)"),
    ("conform: left out of --rules", lambda t, c: ["conform", "stallfree.reference:Scheduler", "--quiet",
                                                   "--rules", "BUDGET", "--examples", "1", "--budget", "4",
                                                   "--max-seqs", "2", "--kv", "32"],
     "FCFS", Verdict.NOT_CHECKED, ""),
    ("conform: a crash stopped the exploration", lambda t, c: ["conform", f"{HOSTILE}:RaisesInSchedule", "--quiet",
                                                               "--examples", "1", "--budget", "4", "--max-seqs", "2",
                                                               "--kv", "32"],
     "BUDGET", Verdict.NOT_JUDGED, "CRASH at every config"),
    ("conform: the target declares a rule not applicable", lambda t, c: [
        "conform", f"{HOSTILE}:DeclaresKvNotApplicable", "--quiet", "--examples", "1", "--budget", "4",
        "--max-seqs", "2", "--kv", "32"],
     "KV", Verdict.NOT_APPLICABLE, "it pages its KV"),
    ("conform: the target lacks cancel()", lambda t, c: [
        "conform", "stallfree.testing.plain:Plain", "--quiet", "--examples", "1", "--budget", "4",
        "--max-seqs", "2", "--kv", "32"],
     "CANCEL", Verdict.NOT_SUPPORTED, ""),
]


@pytest.mark.parametrize(("name", "argv", "rule", "verdict", "why"), CASES, ids=[c[0] for c in CASES])
def test_a_rule_left_unchecked_never_reads_holds(
    name: str, argv: Callable[[Path, pytest.CaptureFixture[str]], list[str]], rule: str, verdict: Verdict, why: str,
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    ran = call(argv(tmp_path, capsys), capsys)
    line = re.search(rf"^{re.escape(rule)}\s+(.*)$", ran.out, re.M)
    assert line is not None, ran.out
    assert line.group(1).startswith(verdict.label), line.group(0)
    assert re.search(why, line.group(1)), line.group(0)
    assert "holds" not in line.group(1)


def test_the_executor_report_holds_only_over_a_run_that_ended() -> None:
    from stallfree.executor.engine.job import JobResult
    from stallfree.executor.runs.report import judgements

    sections, _ = judgements(JobResult("x", violation=("BUDGET", 2, "too many", "monitor")), ("BUDGET", "FCFS"))
    verdicts = {j.claim: j.verdict for j in sections["monitor"]}
    assert verdicts == {"BUDGET": Verdict.BROKEN, "FCFS": Verdict.NOT_JUDGED}
    assert {j.verdict for j in sections["real path"]} == {Verdict.NOT_JUDGED}


def test_prove_keeps_not_refuted_and_unknown_apart_from_holds() -> None:
    from stallfree.commands.prove import summary
    from stallfree.proofs.suite import Row

    rows = [Row("CONTRACTS", "CrossHair", "-", Verdict.NOT_REFUTED, 1.0), Row("KV", "Z3", "-", Verdict.UNKNOWN, 1.0)]
    assert summary(rows).startswith("0 of 2 claims hold")
    assert not Row("KV", "Z3", "-", Verdict.NOT_REFUTED, 1.0).failed
    assert Row("KV", "Z3", "-", Verdict.UNKNOWN, 1.0).failed


def test_simulate_without_check_says_no_rule_was_checked(capsys: pytest.CaptureFixture[str]) -> None:
    ran = call(["simulate", "--trace", "code", "--limit", "5", "--quiet"], capsys)
    assert ran.status == 0 and "rules: not checked (give --check" in ran.out and "held" not in ran.out


def test_campaign_names_the_rules_it_checked(capsys: pytest.CaptureFixture[str]) -> None:
    ran = call(["campaign", "--sims", "2", "--jobs", "1", "--quiet", "--rules", "BUDGET"], capsys)
    assert ran.status == 0 and "no rule broken (checked: BUDGET)" in ran.out


def test_every_verdict_short_of_holds_is_met() -> None:
    met = {verdict for *_, verdict, _ in CASES} | {Verdict.NOT_REFUTED, Verdict.UNKNOWN}  # the prove case above
    assert met == set(Verdict) - {Verdict.HOLDS, Verdict.BROKEN}


def test_an_empty_selection_is_refused_in_the_python_api_too() -> None:
    from stallfree.conformance import conformance_tests
    from stallfree.conformance.kit import conform

    with pytest.raises(ValueError, match="no rule given"):
        conform("stallfree.reference:Scheduler", rules=[])
    with pytest.raises(ValueError, match="no rule given"):
        conformance_tests("stallfree.reference:Scheduler", rules=[])
