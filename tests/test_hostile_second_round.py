"""Cases of the second hostile round, each with the status the README's exit-status table promises:
a factory that returns the class instead of a scheduler, a closed stdin, a cancel of a rid the run
never adds, and inputs read without end (/dev/zero). The others of that round are tested beside the
behaviour they defend: tests/test_exit_statuses.py (a broken pipe, the breaking step in a written
trace, duplicate keys, NaN, deep nesting, an empty trace), tests/test_outputs.py (devices, FIFOs,
symlinks, an output naming an input, SIGTERM), tests/test_kv_after_cancel.py, tests/test_linear_cost.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import EVENT_LIMIT_S, assert_refused, call, env

HOSTILE = "hostile_schedulers"
CLASS = f"{HOSTILE}:returns_the_class"
NAMED = "returned the class Scheduler itself, not a scheduler"
TRACES = Path(__file__).parent / "data" / "engine-traces"


@pytest.mark.parametrize("argv", [
    ["trace", "--example", "hand", "--scheduler", CLASS],
    ["simulate", "--trace", "code", "--limit", "5", "--quiet", "--scheduler", CLASS],
    ["campaign", "--sims", "3", "--jobs", "1", "--quiet", "--scheduler", CLASS],
], ids=["trace", "simulate", "campaign"])
def test_a_factory_that_returns_the_class_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    ran = call(argv, capsys)
    assert_refused(ran, "--scheduler", CLASS, NAMED)
    assert "NEVER-FIT" not in ran.out


def test_conform_of_a_factory_that_returns_the_class_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    ran = call(["conform", CLASS, "--quiet", "--examples", "1", "--budget", "4", "--max-seqs", "2", "--kv", "32"],
               capsys)
    assert ran.status == 1, ran.out[-2000:]
    assert f"PROTOCOL         BROKEN at step 0: the factory {NAMED}" in ran.out
    assert "NEVER-FIT        BROKEN" not in ran.out


def test_check_trace_of_a_closed_stdin_is_an_input_error() -> None:
    done = subprocess.run([sys.executable, "-m", "stallfree", "check-trace", "-"], capture_output=True, text=True,
                          env=env(), timeout=EVENT_LIMIT_S, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: os.close(0))  # as `stallfree check-trace - <&-`
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "stallfree check-trace: -: standard input is closed"


def test_run_cancel_of_a_rid_never_added_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    ran = call(["run", "--tp", "1", "--cancel", "99@0"], capsys)
    assert_refused(ran, "--cancel 99@0", "rid 99 is not a request of the workload")


@pytest.mark.parametrize("argv", [
    ["import-trace", "/dev/zero", "--workload", str(TRACES / "workloads" / "w4_kv_pressure_preempt.json"),
     "--config", str(TRACES / "workloads" / "w4_kv_pressure_preempt.config.json")],
    ["import-trace", str(TRACES / "vllm-0.33-v1" / "w4_kv_pressure_preempt.jsonl"), "--workload", "/dev/zero",
     "--config", str(TRACES / "workloads" / "w4_kv_pressure_preempt.config.json")],
    ["exercise", "1", "/dev/zero"],
], ids=["import-trace STEPS", "import-trace --workload", "exercise FILE"])
def test_an_endless_input_is_cut_and_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert_refused(call(argv, capsys), "/dev/zero", "longer than")


def test_conform_of_a_factory_that_refuses_every_config_judges_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """Every config refused: each rule reads not judged and the status is a usage error, never
    'every checked rule held' and 0."""
    ran = call(["conform", f"{HOSTILE}:factory_raises", "--quiet", "--examples", "1"], capsys)
    assert_refused(ran, "the factory refused every config", "no scheduler today")
    assert "every checked rule held" not in ran.out and "nothing judged" in ran.out
    assert " holds" not in ran.out


@pytest.mark.parametrize("exercise", ["4", "5"])
def test_an_exercise_answer_calling_os_exit_0_does_not_pass(exercise: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    answer = tmp_path / "answer.py"
    answer.write_text("import os\nos._exit(0)\n")
    assert_refused(call(["exercise", exercise, str(answer)], capsys), "os._exit(0)", status=3)


def test_an_exercise_answer_that_hangs_on_import_is_stopped(tmp_path: Path) -> None:
    answer = tmp_path / "answer.py"
    answer.write_text("while True:\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "stallfree", "exercise", "4", str(answer)], capture_output=True,
                          text=True, env={**env(), "STALLFREE_LOAD_TIMEOUT": "1"}, timeout=EVENT_LIMIT_S)
    assert done.returncode == 2, done.stderr
    assert "importing it did not finish within 1 s" in done.stderr.strip().splitlines()[-1]
