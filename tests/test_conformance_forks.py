"""A scheduler that forks inside the conformance worker: the copy never answers for the worker
(conformance/isolation/forked.py), and no copy outlives the sandbox (its process group is killed at
close). Processes are waited on as events; the limit only turns a hang into a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hostile import wait_for

from stallfree.conformance.isolation.sandbox import Sandbox
from stallfree.conformance.kit import PASS, conform
from stallfree.spec import Arrival, Config, Workload

WORKLOAD = Workload(Config(8, 2, 64), (Arrival(0, 20, 6, 0), Arrival(1, 30, 5, 2)))
RULES = ["BUDGET", "SLOTS"]


def verdicts(name: str, runs: int = 4) -> list[str | None]:
    with Sandbox(f"forking_targets:{name}") as sandbox:
        return [sandbox.run(WORKLOAD, RULES).rule for _ in range(runs)]


def test_a_copy_forked_in_schedule_never_answers_for_the_worker() -> None:
    assert verdicts("ForksAndLies") == [None] * 4


def test_the_control_a_copy_that_answers_is_seen() -> None:
    """The copy with the worker's marks undone answers too: some run reads its BUDGET break."""
    assert "BUDGET" in verdicts("ForksAndLiesUnseen")


def test_conform_judges_a_scheduler_that_forks_as_the_reference() -> None:
    report = conform("forking_targets:ForksAndLies", budget=8, max_seqs=2, kv_tokens=64, examples=20)
    assert set(report.verdicts.values()) == {PASS}, report.verdicts


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie nobody reaps is none)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def sleeper(name: str, pid_file: Path) -> int:
    """Runs `name` once in a sandbox; the copy's process id, and it is alive until the sandbox closes."""
    with Sandbox(f"forking_targets:{name}") as sandbox:
        assert sandbox.run(WORKLOAD, RULES).rule is None
        pid = int(pid_file.read_text())
        assert alive(pid)
    return pid


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_a_copy_forked_in_complete_ends_with_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STALLFREE_TEST_PID_FILE", str(tmp_path / "pid"))
    pid = sleeper("ForksASleeper", tmp_path / "pid")
    wait_for(lambda: not alive(pid), "the copy ended")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_the_control_a_copy_that_leaves_the_group_is_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the check sees when a copy is left: one that left the worker's group itself (setsid) is out
    of the kit's reach (docs/conformance.md), and still alive after the sandbox closed."""
    monkeypatch.setenv("STALLFREE_TEST_PID_FILE", str(tmp_path / "pid"))
    pid = sleeper("ForksASleeperThatLeaves", tmp_path / "pid")
    try:
        assert alive(pid)
    finally:
        os.kill(pid, 9)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_no_copy_is_left_after_conform_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STALLFREE_TEST_PID_FILE", str(tmp_path / "pid"))
    report = conform("forking_targets:ForksASleeper", budget=8, max_seqs=2, kv_tokens=64, examples=3)
    assert set(report.verdicts.values()) == {PASS}, report.verdicts
    pid = int((tmp_path / "pid").read_text())  # written by the worker before its first complete() returned
    wait_for(lambda: not alive(pid), "the copy ended")
