"""Hostile targets: whatever the scheduler under test does (raise, hang, exit, return junk), the kit
reports it cleanly, by name, and neither crashes nor hangs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from stallfree.conformance.isolation.outcome import CRASH, TIMEOUT
from stallfree.conformance.kit import NOT_JUDGED, Report, conform
from stallfree.main import main
from stallfree.spec.utils.loader import TargetError

HOSTILE = textwrap.dedent('''
    import os
    import signal
    import sys
    import time

    from stallfree.reference import Scheduler


    class RaisesInSchedule(Scheduler):
        def schedule(self):
            raise RuntimeError("out of blocks")


    class RaisesInAdd(Scheduler):
        def add(self, rid, prompt_len, max_new):
            raise KeyError(rid)


    class BusyLoop(Scheduler):
        def schedule(self):
            while True:
                pass


    class CancelsTheTimerOnce(Scheduler):
        calls = 0

        def schedule(self):
            self.calls += 1
            if self.calls == 1:
                signal.setitimer(signal.ITIMER_REAL, 0)
            else:
                time.sleep(0.3)
            return super().schedule()


    class SleepsInComplete(Scheduler):
        def complete(self, plan):
            time.sleep(3600)


    class SwallowsTimeouts(Scheduler):
        def schedule(self):
            while True:
                try:
                    time.sleep(3600)
                except BaseException:
                    pass


    class Exits(Scheduler):
        def schedule(self):
            os._exit(3)


    class ReturnsNone(Scheduler):
        def schedule(self):
            super().schedule()
            return None


    class ReturnsStrings(Scheduler):
        def schedule(self):
            return [("a", "b")]


    class UnknownRid(Scheduler):
        def schedule(self):
            return [(999, 1)]


    class CompleteReturnsInt(Scheduler):
        def complete(self, plan):
            super().complete(plan)
            return 5


    class Chatty(Scheduler):
        def schedule(self):
            print("x" * 10000)
            sys.stdout.flush()
            return super().schedule()


    class NoSchedule:
        def __init__(self, **config):
            pass

        def add(self, rid, prompt_len, max_new):
            pass

        def complete(self, plan):
            return []


    def broken_factory(**config):
        raise MemoryError("no device")
''')

CONFIG = {"budget": 4, "max_seqs": 2, "kv_tokens": 64, "examples": 2}


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "hostile_schedulers.py").write_text(HOSTILE)
    (tmp_path / "broken_import.py").write_text("raise SystemExit('import-time exit')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return "hostile_schedulers"


def problem(report: Report) -> tuple[str, str, str]:
    """The one finding that no rule names; every rule is then not judged, never passed."""
    assert not report.ok
    [(name, c)] = [(r, c) for r, c in report.counterexamples.items() if r not in report.verdicts]
    assert NOT_JUDGED in report.verdicts.values() and "pass" not in report.verdicts.values()
    return name, c.message, c.traceback


def test_crash_in_schedule_is_reported_with_its_traceback(hostile: str) -> None:
    name, message, tb = problem(conform(f"{hostile}:RaisesInSchedule", **CONFIG))
    assert name == CRASH and "schedule() raised RuntimeError: out of blocks" in message
    assert "hostile_schedulers.py" in tb and "raise RuntimeError" in tb


def test_crash_in_add_of_a_valid_request_is_a_crash(hostile: str) -> None:
    name, message, _ = problem(conform(f"{hostile}:RaisesInAdd", **CONFIG))
    assert name == CRASH and "add(" in message and "KeyError" in message


def test_crash_in_the_factory_is_reported(hostile: str) -> None:
    name, message, _ = problem(conform(f"{hostile}:broken_factory", **CONFIG))
    assert name == CRASH and "factory(token_budget=" in message and "MemoryError" in message


@pytest.mark.timeout(60)
def test_busy_loop_is_stopped_by_the_per_call_timeout(hostile: str) -> None:
    name, message, tb = problem(conform(f"{hostile}:BusyLoop", timeout=0.2, **CONFIG))
    assert name == TIMEOUT and "schedule() did not return within the per-call timeout of 0.2 s" in message
    assert "while True" in tb


@pytest.mark.timeout(60)
def test_sleep_is_stopped_by_the_per_call_timeout(hostile: str) -> None:
    name, message, _ = problem(conform(f"{hostile}:SleepsInComplete", timeout=0.2, **CONFIG))
    assert name == TIMEOUT and "complete(plan)" in message


@pytest.mark.timeout(60)
def test_a_target_that_cancels_the_timer_once_is_still_timed_at_its_next_call(hostile: str) -> None:
    """Seen by a review of a cheaper alarm (one that set the timer once and trusted it): one cancel left
    every later call untimed, and a scheduler too slow per call passed."""
    name, message, _ = problem(conform(f"{hostile}:CancelsTheTimerOnce", timeout=0.2, **CONFIG))
    assert name == TIMEOUT and "schedule() did not return within the per-call timeout of 0.2 s" in message


@pytest.mark.timeout(60)
def test_a_target_that_swallows_the_timeout_is_killed_by_the_watchdog(hostile: str) -> None:
    name, message, tb = problem(conform(f"{hostile}:SwallowsTimeouts", timeout=0.2, run_timeout=1.0, **CONFIG))
    assert name == TIMEOUT and "stopped from outside" in message
    assert "schedule" in tb  # the traceback the worker dumped before it was killed


def test_exiting_worker_is_a_crash_and_the_kit_goes_on(hostile: str) -> None:
    name, message, _ = problem(conform(f"{hostile}:Exits", **CONFIG))
    assert name == CRASH and "exit code 3" in message


@pytest.mark.parametrize(("factory", "words"), [
    ("ReturnsNone", "schedule() returned NoneType"),
    ("ReturnsStrings", "rid and n must be ints"),
    ("UnknownRid", "rid 999, which was never added"),
    ("CompleteReturnsInt", "complete() returned int"),
    ("NoSchedule", "has no schedule() method"),
])
def test_junk_is_a_protocol_error(hostile: str, factory: str, words: str) -> None:
    name, message, _ = problem(conform(f"{hostile}:{factory}", **CONFIG))
    assert name == "PROTOCOL" and words in message


def test_prints_do_not_disturb_the_kit(hostile: str) -> None:
    assert conform(f"{hostile}:Chatty", **CONFIG).ok


@pytest.mark.parametrize(("target", "words"), [
    ("no_such_module:Factory", "importing no_such_module failed: ModuleNotFoundError"),
    ("broken_import:Factory", "importing broken_import failed: SystemExit"),
    ("hostile_schedulers:Missing", "has no attribute 'Missing'"),
    ("hostile_schedulers", "expected MODULE:FACTORY"),
])
def test_a_target_that_cannot_be_loaded_is_an_argument_error(
    hostile: str, target: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(TargetError, match=words):
        conform(target, **CONFIG)
    assert main(["conform", target, "--examples", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_cli_exit_codes_and_json(hostile: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    out = tmp_path / "report.json"
    args = ["--budget", "2", "--max-seqs", "2", "--kv", "16", "--examples", "2", "--quiet"]
    assert main(["conform", f"{hostile}:UnknownRid", *args, "--json", str(out)]) == 1
    data = json.loads(out.read_text())
    assert data["ok"] is False and data["problems"][0]["rule"] == "PROTOCOL"
    assert {v["verdict"] for v in data["rules"].values()} == {NOT_JUDGED}
    assert main(["conform", "stallfree.reference:Scheduler", *args, "--profile", "safety", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["rules"]["BUDGET"]["verdict"] == "holds" and data["rules"]["FCFS"]["verdict"] == "not checked"
    assert main(["conform", "stallfree.reference:Scheduler", "--profile", "fast"]) == 2
    assert "profile 'fast' is unknown" in capsys.readouterr().err
