"""The pytest plugin, as a scheduler's repository uses it: one file, or one option; one test per rule.
Each run is a separate pytest process in a fresh directory, so nothing of this repository leaks in."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SCHEDULER = textwrap.dedent('''
    from stallfree.reference import Scheduler


    class SkipsAhead(Scheduler):
        """Admits a smaller request when the head of the queue does not fit: breaks FCFS only."""

        def schedule(self):
            waiting = self._waiting
            if waiting and next(iter(waiting.values())).request.reservation > self._free_kv:
                for rid, seq in waiting.items():
                    if seq.request.reservation <= self._free_kv:
                        waiting.move_to_end(rid, last=False)
                        break
            return super().schedule()
''')


def run_pytest(python: str, where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS_"))}
    return subprocess.run(
        [python, "-m", "pytest", "-v", "-p", "no:cacheprovider", *args],
        cwd=where, capture_output=True, text=True, timeout=600, env=env,
    )


def test_conformance_tests_gives_one_test_per_rule(tmp_path: Path) -> None:
    (tmp_path / "mysched.py").write_text(SCHEDULER)
    (tmp_path / "test_mine.py").write_text(
        "from stallfree.conformance import conformance_tests\n\n"
        'test_mine = conformance_tests("mysched:SkipsAhead", examples=3, budget=4)\n'
    )
    result = run_pytest(sys.executable, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "test_mine.py::test_mine[FCFS] FAILED" in result.stdout
    assert "test_mine.py::test_mine[BUDGET] PASSED" in result.stdout
    assert "test_mine.py::test_mine[PROTOCOL] PASSED" in result.stdout
    assert "1 failed, 14 passed" in result.stdout
    assert "== FCFS broken ==" in result.stdout and "def test_fcfs_minimal_counterexample" in result.stdout


def test_stallfree_target_option_with_a_profile(tmp_path: Path) -> None:
    result = run_pytest(sys.executable, tmp_path, "--stallfree-target", "stallfree.reference:Scheduler",
                        "--stallfree-profile", "safety", "--stallfree-examples", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "::stallfree[BUDGET] PASSED" in result.stdout
    assert "::stallfree[FCFS] SKIPPED (FCFS not checked: not in profile safety)" in result.stdout
    assert "8 passed, 7 skipped" in result.stdout  # the safety profile: 7 rules, CANCEL among them


def test_an_unloadable_target_fails_every_test_with_the_reason(tmp_path: Path) -> None:
    result = run_pytest(sys.executable, tmp_path, "--stallfree-target", "nowhere:Factory", "-q")
    assert result.returncode == 1
    assert "importing nowhere failed: ModuleNotFoundError" in result.stdout and "15 failed" in result.stdout


@pytest.mark.deep
def test_plugin_and_check_trace_work_from_a_fresh_venv(tmp_path: Path) -> None:
    """Installs stallfree[conform] and pytest into a new venv (needs the package index)."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "-q", f"{REPO}[conform]", "pytest"],
                             capture_output=True, text=True, timeout=900)
    # A failed install is a failure of this test, not a skip: installability is what it checks.
    assert install.returncode == 0, f"could not install into a fresh venv: {install.stderr[-600:]}"
    work = tmp_path / "work"
    work.mkdir()
    (work / "mysched.py").write_text(SCHEDULER)
    (work / "test_mine.py").write_text(
        'from stallfree.conformance import conformance_tests\ntest_mine = conformance_tests("mysched:SkipsAhead", '
        "examples=3, budget=4)\n"
    )
    result = run_pytest(python, work)
    assert "1 failed, 14 passed" in result.stdout, result.stdout + result.stderr
    stallfree = str(env_dir / "bin" / "stallfree")
    subprocess.run([stallfree, "trace", "--example", "hand", "--jsonl", "hand.jsonl"], cwd=work, check=True,
                   capture_output=True)
    checked = subprocess.run([stallfree, "check-trace", "hand.jsonl"], cwd=work, capture_output=True, text=True)
    assert checked.returncode == 0 and "WORK-CONSERVING  holds (6 steps)" in checked.stdout
