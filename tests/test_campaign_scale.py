"""`stallfree campaign` at stallfree's base scale (at least 400 simulations and 366,724 steps): the
reference keeps every rule; the campaign catches a wrong scheduler and prints a workload that
replays the broken rule; results do not depend on the number of jobs."""

from __future__ import annotations

import json
import re
import sys

import pytest

from stallfree.faults import FAULTS
from stallfree.main import main
from stallfree.reference import Scheduler
from stallfree.spec import Config, RuleViolation, Workload, play
from stallfree.testing.campaign import Campaign, run

SEED_SIMS = 400  # the published campaign: 400 randomized simulations ...
SEED_STEPS = 366_724  # ... and 366,724 steps


def figure(output: str, label: str) -> int:
    match = re.search(rf"^{label}\s+([\d,]+)", output, re.MULTILINE)
    assert match, f"no '{label}' line in:\n{output}"
    return int(match.group(1).replace(",", ""))


def test_campaign_at_seed_scale_keeps_every_rule(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the progress bar is drawn on a terminal
    assert main(["campaign", "--sims", "500", "--seed", "0", "--jobs", "2"]) == 0
    out = capsys.readouterr()
    assert figure(out.out, "simulations") >= SEED_SIMS
    assert figure(out.out, "steps") >= SEED_STEPS
    assert figure(out.out, "rules per step") == 15
    assert "no rule broken" in out.out
    assert "500/500 sims" in out.err  # the progress bar


@pytest.mark.parametrize("rule", ["FCFS", "KV"])
def test_campaign_reports_first_violation_with_a_replayable_workload(
    rule: str, capsys: pytest.CaptureFixture[str],
) -> None:
    target = f"stallfree.faults.catalog:{FAULTS[rule].__name__}"
    assert main(["campaign", "--sims", "200", "--jobs", "2", "--quiet", "--scheduler", target]) == 1
    out = capsys.readouterr().out
    assert f"\n{rule} broken at step" in out
    workload = Workload.from_json(json.loads(out.strip().splitlines()[-1]))
    with pytest.raises(RuleViolation) as again:
        play(workload, FAULTS[rule])
    assert again.value.rule == rule


def test_campaign_counts_do_not_depend_on_jobs() -> None:
    one = run(Campaign(24, 7, Scheduler, jobs=1))
    two = run(Campaign(24, 7, Scheduler, jobs=2))
    assert (one.sims, one.requests, one.steps, one.tokens, one.checks) == (
        two.sims, two.requests, two.steps, two.tokens, two.checks)
    assert one.violation is None and one.sims == 24


@pytest.mark.parametrize(("target", "reason"), [
    ("no_such_module:Factory", "No module named 'no_such_module'"),
    ("stallfree.reference:Nope", "has no attribute 'Nope'"),
    ("stallfree.reference", "expected MODULE:FACTORY"),
    ("stallfree.spec:RULES", "RULES is a tuple, not callable"),
    ("stallfree.spec:Request", "calling it with token_budget=, max_seqs=, kv_tokens= raised TypeError"),
])
def test_campaign_bad_scheduler_is_exit_2_naming_flag_and_value(
    target: str, reason: str, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["campaign", "--sims", "1", "--scheduler", target]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"stallfree campaign: --scheduler {target!r}: ") and reason in err


def test_campaign_stops_at_a_scheduler_that_raises_with_the_workload(capsys: pytest.CaptureFixture[str]) -> None:
    # Config takes the factory's keywords but has no add(): the first add() raises AttributeError.
    argv = ["campaign", "--sims", "30", "--jobs", "2", "--quiet", "--scheduler", "stallfree.spec:Config"]
    assert main(argv) == 3  # a crash of the checked scheduler, not a broken rule
    out = capsys.readouterr().out
    crash = "AttributeError: 'Config' object has no attribute 'add'"
    assert f"CRASH in simulation 0 (seed 0): {crash} (raised at " in out
    assert "spec/watch.py:" in out and " in offer)" in out  # where: the monitor's call to the missing add()
    assert Workload.from_json(json.loads(out.strip().splitlines()[-1])) == Campaign(1, 0, Config).workload(0)


def test_campaign_sims_must_be_positive() -> None:
    with pytest.raises(SystemExit) as bad:
        main(["campaign", "--sims", "0"])
    assert bad.value.code == 2


@pytest.mark.deep
def test_campaign_at_100x_the_seed_scale_keeps_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["campaign", "--sims", str(100 * SEED_SIMS), "--seed", "1", "--jobs", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert figure(out, "simulations") == 100 * SEED_SIMS
    assert figure(out, "steps") >= 90 * SEED_STEPS  # about 910 steps a simulation at these ranges
