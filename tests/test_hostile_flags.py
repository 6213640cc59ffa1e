"""Bad values for every flag of every command: exit 2, the last line of stderr names the flag and the
value, no traceback, no --json file left behind, and quickly (nothing runs before the refusal)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import assert_not_written, assert_refused, call

HUGE = "9223372036854775808"  # 2**63: one past the largest field value
DIGITS = "1" * 25  # a value no count reaches
MISSING = "/nonexistent-stallfree-dir/out.json"

BASES = {
    "trace": ["trace", "--request", "0:3:1"],
    "check-trace": ["check-trace", "TRACE"],
    "conform": ["conform", "stallfree.reference:Scheduler", "--quiet"],
    "campaign": ["campaign", "--sims", "1", "--jobs", "1", "--quiet"],
    "budget": ["budget"],
    "simulate": ["simulate", "--trace", "code", "--limit", "5", "--quiet"],
    "prove": ["prove", "--methods", "model", "--bound", "2,2,6,2,2,2"],
    "run": ["run", "--tp", "1"],
}


def positive_ints(command: str, *flags: str) -> list[tuple[str, list[str], tuple[str, ...]]]:
    cases = []
    for flag in flags:
        for value in ("0", "-1", "x", "1.5", HUGE, DIGITS):
            cases.append((command, [flag, value], (flag, value[:20])))
    return cases


def bad(command: str, flag: str, *values: str) -> list[tuple[str, list[str], tuple[str, ...]]]:
    return [(command, [flag, value], (flag, value[:20])) for value in values]


RULES = ("", ",", "NOPE")
SCHEDULERS = ("nocolon", "no_such_module_x:F", "stallfree.reference:Nope")

CASES = [
    *positive_ints("trace", "--budget", "--max-seqs", "--kv"),
    *bad("trace", "--request", "x", "1:2", "1:2:3@x", "a:b:c"),
    *bad("trace", "--rules", *RULES),
    *bad("trace", "--scheduler", *SCHEDULERS),
    *bad("trace", "--example", "bogus"),
    *bad("trace", "--workload", "/nonexistent.json"),
    *bad("trace", "--jsonl", MISSING),
    *bad("trace", "--json", MISSING),
    *bad("trace", "--timeout", "0", "-1", "nan", "inf", "x", "1e9"),
    *bad("check-trace", "--rules", *RULES),
    *bad("check-trace", "--profile", "bogus"),
    *bad("check-trace", "--json", MISSING),
    *positive_ints("conform", "--budget", "--max-seqs", "--kv"),
    *bad("conform", "--examples", "0", "-1", "x", "100001"),
    *bad("conform", "--seed", "-1", "x", HUGE),
    *bad("conform", "--timeout", "0", "-1", "nan", "inf", "x", "1e9"),
    *bad("conform", "--rules", *RULES),
    *bad("conform", "--profile", "bogus"),
    *bad("conform", "--configs", "bogus"),
    *bad("conform", "--json", MISSING),
    *positive_ints("campaign", "--sims"),
    *bad("campaign", "--seed", "-1", "x", HUGE),
    *bad("campaign", "--jobs", "0", "1000", "x", "1" * 20),
    *bad("campaign", "--rules", *RULES),
    *bad("campaign", "--scheduler", *SCHEDULERS),
    *bad("campaign", "--json", MISSING),
    *positive_ints("budget", "--tp", "--prompt-len", "--decode-context"),
    *bad("budget", "--decodes", "-1", "x", DIGITS),
    *bad("budget", "--budgets", "", "0", "x", "1,,2"),
    *bad("budget", "--model", "bogus"),
    *bad("budget", "--gpu", "bogus"),
    *bad("budget", "--dtype", "bogus"),
    *bad("budget", "--kv-dtype", "bogus"),
    *bad("budget", "--mode", "bogus"),
    *bad("budget", "--json", MISSING),
    *bad("simulate", "--budget", "0", "x", HUGE),
    *bad("simulate", "--max-seqs", "0", "x", HUGE),
    *bad("simulate", "--kv", "0", "x", HUGE),
    *bad("simulate", "--limit", "0", "x", DIGITS),
    *bad("simulate", "--rate-scale", "0", "-1", "nan", "inf", "x", "1e7"),
    *bad("simulate", "--trace", "/nonexistent.csv"),
    *bad("simulate", "--scheduler", "nocolon"),
    *bad("simulate", "--json", MISSING),
    *bad("prove", "--requests", "0", "65", "x"),
    *bad("prove", "--crosshair-seconds", "0", "nan", "inf", "x"),
    *bad("prove", "--max-states", "0", "x"),
    *bad("prove", "--methods", "", "tlc"),
    *bad("prove", "--bound", "1,2,3", "x"),
    *bad("prove", "--fault", "NOPE"),
    *bad("prove", "--scheduler", "nocolon"),
    *bad("prove", "--json", MISSING),
    *bad("run", "--tp", "0", "x", HUGE),
    *bad("run", "--budget", "0", "x", HUGE),
    *bad("run", "--seed", "-1", "x"),
    *bad("run", "--rules", *RULES),
    *bad("run", "--dtype", "bogus"),
    *bad("run", "--device", "bogus"),
    *bad("run", "--timeout", "0", "nan", "inf"),
    *bad("run", "--layers", "0", "x"),
]


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from stallfree.main import main

    path = tmp_path_factory.mktemp("trace") / "hand.jsonl"
    assert main(["trace", "--example", "hand", "--jsonl", str(path)]) == 0
    return path


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 180
    assert {command for command, _, _ in CASES} == set(BASES)


@pytest.mark.parametrize(("command", "flag_value", "named"), CASES,
                         ids=[f"{c}{' '.join(fv)}" for c, fv, _ in CASES])
def test_a_bad_value_is_one_line_naming_the_flag_and_the_value(
    command: str, flag_value: list[str], named: tuple[str, ...], trace_file: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out.json"
    base = [str(trace_file) if part == "TRACE" else part for part in BASES[command]]
    if flag_value[0] in ("--workload", "--example"):  # a source of its own: no --request beside it
        base = [command]
    ran = call([*base, "--json", str(out), *flag_value], capsys)
    flag, value = named
    # argparse names the flag as "argument --flag"; an empty value is shown as ''.
    assert_refused(ran, flag, value if value else "''")
    assert_not_written(out)
