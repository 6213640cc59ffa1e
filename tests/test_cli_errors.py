"""Bad input to any command: exit 2 with one line naming the flag and the value, never a traceback,
and output paths refused before the run, not after it."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from stallfree.commands import args as shared
from stallfree.commands import campaign, conform, run, simulate
from stallfree.main import main

MISSING_DIR = "/nonexistent-stallfree-dir"
MISSING_JSON = f"{MISSING_DIR}/out.json"
QUICK_TRACE = ["trace", "--request", "0:3:1"]


def exit_code(argv: Sequence[str]) -> int:
    """main's code, whether the command returns it or argparse exits with it."""
    try:
        return main(list(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)


def refused(argv: Sequence[str], capsys: pytest.CaptureFixture[str], *named: str) -> str:
    """Run argv, expect exit 2 and every string of `named` on stderr; returns stderr."""
    assert exit_code(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for text in named:
        assert text in err, f"{text!r} not in {err!r}"
    return err


def must_not_run(monkeypatch: pytest.MonkeyPatch, module: str, name: str) -> None:
    """Make the command's long run fail loudly: the bad path must be refused before it."""

    def ran(*_: object, **__: object) -> None:
        raise AssertionError(f"{module}.{name} ran before the bad output path was refused")

    monkeypatch.setattr(f"{module}.{name}", ran)


# 1. Output paths are checked before the run.

@pytest.mark.parametrize(("argv", "module", "name"), [
    (["simulate", "--trace", "code", "--limit", "5", "--quiet", "--json", MISSING_JSON],
     "stallfree.sim.simulator", "simulate"),
    (["prove", "--methods", "model", "--json", MISSING_JSON], "stallfree.proofs.suite", "run"),
    (["run", "--tp", "1", "--json", MISSING_JSON], "stallfree.executor.runs.launch", "launch"),
    (["conform", "stallfree.reference:Scheduler", "--quiet", "--json", MISSING_JSON],
     "stallfree.conformance.kit", "conform"),
    (["check-trace", "/dev/null", "--quiet", "--json", MISSING_JSON],
     "stallfree.conformance.trace.tracecheck", "check_trace"),
])
def test_json_into_a_missing_directory_is_refused_before_the_run(
    argv: list[str], module: str, name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    must_not_run(monkeypatch, module, name)
    refused(argv, capsys, f"--json '{MISSING_JSON}': directory {MISSING_DIR} does not exist")


def test_plot_under_a_missing_parent_is_refused_before_the_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    must_not_run(monkeypatch, "stallfree.sim.simulator", "simulate")
    plots = f"{MISSING_DIR}/plots"
    message = f"--plot '{plots}': directory {MISSING_DIR} does not exist"
    refused(["simulate", "--quiet", "--plot", plots], capsys, message)


def test_trace_jsonl_into_a_missing_directory_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    out = f"{MISSING_DIR}/run.jsonl"
    refused([*QUICK_TRACE, "--jsonl", out], capsys, f"--jsonl '{out}': directory {MISSING_DIR} does not exist")


def test_json_that_is_a_directory_or_under_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    must_not_run(monkeypatch, "stallfree.conformance.kit", "conform")
    target = ["conform", "stallfree.reference:Scheduler", "--quiet", "--json"]
    refused([*target, str(tmp_path)], capsys, f"--json '{tmp_path}': is a directory")
    plain = tmp_path / "plain"
    plain.write_text("")
    refused([*target, str(plain / "x.json")], capsys, f"--json '{plain / 'x.json'}': {plain} is not a directory")


def test_output_checks_accept_what_can_be_written_and_create_nothing(tmp_path: Path) -> None:
    shared.check_output_file("--json", tmp_path / "new.json")
    shared.check_output_dir("--plot", tmp_path / "plots")  # DIR itself may be made later by the command
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match=r"directory .* does not exist"):
        shared.check_output_dir("--plot", tmp_path / "a" / "plots")  # missing parents are not made


def test_unwritable_output_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests may run as root, whom permissions do not stop: os.access stands in for a read-only folder.
    monkeypatch.setattr(shared.os, "access", lambda *_: False)
    message = f"--json '{tmp_path / 'x.json'}': directory {tmp_path} is not writable"
    with pytest.raises(ValueError, match=re.escape(message)):
        shared.check_output_file("--json", tmp_path / "x.json")
    with pytest.raises(ValueError, match=re.escape(f"--plot '{tmp_path}': is not writable")):
        shared.check_output_dir("--plot", tmp_path)


def test_a_write_that_fails_after_the_check_names_the_flag(tmp_path: Path) -> None:
    gone = tmp_path / "gone" / "x.json"  # as if the folder were removed during the run
    with pytest.raises(ValueError, match=re.escape(f"--json '{gone}': No such file")):
        shared.write_output("--json", gone, "{}")


def test_json_still_written_where_it_can_be(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "run.jsonl"
    assert main([*QUICK_TRACE, "--jsonl", str(trace)]) == 0
    out = tmp_path / "verdicts.json"
    assert main(["check-trace", str(trace), "--quiet", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["ok"] is True


# 2. Errors name the flag and the value.

@pytest.mark.parametrize("command", ["trace", "run"])
def test_missing_workload_names_the_flag(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    refused([command, "--workload", "/nonexistent"], capsys, "--workload '/nonexistent': No such file")


def test_malformed_workload_names_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.json"
    path.write_text("{not json")
    refused(["trace", "--workload", str(path)], capsys, f"--workload '{path}': workload is not valid JSON")


@pytest.mark.parametrize("argv", [
    QUICK_TRACE,
    ["prove", "--methods", "model"],
    ["simulate", "--trace", "code", "--limit", "5", "--quiet"],
])
def test_unimportable_scheduler_names_the_flag(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    refused([*argv, "--scheduler", "nope:X"], capsys,
            "--scheduler 'nope:X': importing nope failed: ModuleNotFoundError: No module named 'nope'")


def test_scheduler_module_that_crashes_on_import_is_a_bad_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "sched_crashes_on_import.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    target = "sched_crashes_on_import:Factory"
    refused([*QUICK_TRACE, "--scheduler", target], capsys, f"--scheduler '{target}'", "RuntimeError: boom")


@pytest.mark.parametrize("argv", [QUICK_TRACE, ["simulate", "--trace", "code", "--limit", "5", "--quiet"]])
def test_scheduler_that_is_not_a_factory_is_a_bad_argument(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """It imports, but calling it with the config fails: the argument is wrong, no rule was broken."""
    refused([*argv, "--scheduler", "builtins:object"], capsys, "--scheduler 'builtins:object'",
            "TypeError: object() takes no arguments")


@pytest.mark.parametrize(("bound", "field"), [
    ("0,2,8,4,3,2", "token_budget must be >= 1, got 0"),
    ("1,2", "expected 6 ints"),
    ("3,x,8,4,3,2", "bound max_seqs must be an int, got 'x'"),
])
def test_prove_bound_names_the_flag(bound: str, field: str, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["prove", "--bound", bound], capsys, f"--bound '{bound}': {field}")
    assert err.count(repr(bound)) == 1  # the value once, not echoed again by the parser


def test_prove_unknown_fault_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    refused(["prove", "--fault", "nope"], capsys, "--fault 'nope': no fault breaks rule 'NOPE'")


# 3. Shared argument types: positive numbers and seeds.

@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "soon"])
@pytest.mark.parametrize("argv", [
    ["run", "--timeout"],
    ["conform", "stallfree.reference:Scheduler", "--timeout"],
    ["simulate", "--rate-scale"],
])
def test_positive_float_refuses(argv: list[str], value: str, capsys: pytest.CaptureFixture[str]) -> None:
    refused([*argv, value], capsys, argv[-1], value)


@pytest.mark.parametrize("argv", [
    ["run"],
    ["conform", "stallfree.reference:Scheduler"],
    ["campaign"],
])
def test_negative_seed_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    refused([*argv, "--seed", "-1"], capsys, "--seed", "expected an int from 0 to 2**63-1, got -1")


def test_the_argument_types_are_defined_once() -> None:
    assert simulate.positive_float is run.positive_float is shared.positive_float
    assert conform.seconds is shared.seconds
    assert conform.seed is campaign.seed is run.seed is shared.seed
    assert shared.positive_float("0.5") == 0.5 and shared.seed("0") == 0
    with pytest.raises(argparse.ArgumentTypeError):
        shared.seed("1.5")


# 4. trace says why a request is refused, and that no rule was exercised when no step ran.

def test_trace_refusal_says_what_the_spec_says(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "--kv", "10", "--request", "0:3:1", "--request", "1:9:9", "--request", "0:2:1"]) == 0
    out = capsys.readouterr().out
    assert "refused: add(1, 9, 9): prompt_len + max_new = 9 + 9 = 18 exceeds kv_tokens=10" in out
    assert "refused: add(0, 2, 1): rid 0 is already taken" in out


def test_NEVER_FIT_only_when_every_request_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "--kv", "10", "--request", "1:9:9"]) == 0
    out = capsys.readouterr().out
    assert "holds (0 steps)" not in out
    assert re.search(r"^NEVER-FIT\s+holds \(1 add\(\) call\(s\) judged; no step ran\)$", out, re.M)
    assert re.search(r"^BUDGET\s+not judged \(no step ran\)$", out, re.M)
    assert out.count("not judged (no step ran)") == 13  # every rule but NEVER-FIT


# 5. The help says what the executor allows.

def test_run_tp_help_lists_what_the_executor_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    from stallfree.executor.models.config import MODELS
    from stallfree.spec import InvalidField

    assert exit_code(["run", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    listed = re.search(r"tensor-parallel ranks: ([\d, or]+?) \(default", help_text)
    assert listed is not None
    said = {int(n) for n in re.findall(r"\d+", listed.group(1))}
    accepted = set()
    for tp in range(1, 17):
        try:
            MODELS["llama-3.3-70b"].check_divisible(tp)
            accepted.add(tp)
        except InvalidField:
            pass
    assert said == accepted == {1, 2, 4, 8}
