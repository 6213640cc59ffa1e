"""`stallfree prove --jobs N` (proofs/suite_jobs.py): the methods run in worker processes, their rows in
the serial order, an error raised as the serial run would raise it, and Ctrl-C stopping every worker."""

from __future__ import annotations

import os
import posix
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any

import pytest
from hostile import EVENT_LIMIT_S, env, interrupted_job, wait_for

from stallfree.proofs import suite_jobs


def test_a_differential_after_the_model_check_shares_its_unit() -> None:
    methods = ("model", "symbolic", "z3", "differential", "crosshair")
    assert suite_jobs.units(methods, {}) == [((0, None), (3, None)), ((1, None),), ((2, None),), ((4, None),)]
    assert suite_jobs.units(("differential", "model"), {}) == [((0, None),), ((1, None),)]  # no model check before


def test_a_method_in_pieces_is_a_unit_per_piece_the_differentials_first_with_the_model_check() -> None:
    parts = {"z3": ["a", "b"], "differential": ["states", "random", "cancels"]}
    assert suite_jobs.units(("model", "z3", "differential"), parts) == [
        ((0, None), (2, 0)), ((1, 0),), ((1, 1),), ((2, 1),), ((2, 2),)]


def runner(name: str, pause: float = 0.0, fails: bool = False) -> Any:
    def run(options: Any, say: Any) -> list[str]:
        time.sleep(pause)
        if fails:
            raise ValueError(f"{name} failed")
        return [f"{name}:{os.getpid()}", f"{name}:2"]
    return run


RUNNERS = {"model": runner("model", 0.3), "symbolic": runner("symbolic"), "z3": runner("z3", 0.1),
           "differential": runner("differential"), "crosshair": runner("crosshair", 0.2)}


def test_rows_come_back_in_the_serial_order_from_other_processes() -> None:
    options = SimpleNamespace(methods=("model", "symbolic", "z3", "differential", "crosshair"))
    rows = suite_jobs.run(options, print, RUNNERS, 2)
    assert [r.split(":")[0] for r in rows] == ["model", "model", "symbolic", "symbolic", "z3", "z3",
                                                "differential", "differential", "crosshair", "crosshair"]
    pids = {r.split(":")[1] for r in rows[::2]}
    assert str(os.getpid()) not in pids and len(pids) >= 2  # run in workers, more than one
    model_pid = rows[0].split(":")[1]
    assert rows[6].split(":")[1] == model_pid  # the differential ran after the model check, in its worker


def piece(name: str, pause: float = 0.0) -> tuple[str, Any]:
    def run(options: Any, say: Any) -> list[str]:
        time.sleep(pause)
        say(f"{name} ran")
        return [f"{name}:{os.getpid()}"]
    return name, run


def test_pieces_spread_over_the_workers_come_back_in_the_serial_order() -> None:
    parts = {"z3": [piece("z3 a", 0.4), piece("z3 b"), piece("z3 c")], "crosshair": [piece("ch a"), piece("ch b", 0.2)]}
    said: list[str] = []
    options = SimpleNamespace(methods=("z3", "crosshair"))
    rows = suite_jobs.run(options, said.append, RUNNERS, 2, parts)
    assert [r.split(":")[0] for r in rows] == ["z3 a", "z3 b", "z3 c", "ch a", "ch b"]
    assert len({r.split(":")[1] for r in rows}) == 2  # two workers, each taking the next piece as it ends one
    assert sorted(m for m in said if m.endswith(" ran")) == sorted(f"{r.split(':')[0]} ran" for r in rows)
    ends = [m for m in said if m.startswith("proof worker ")]
    assert len(ends) == 2 and all(" s CPU over " in m for m in ends)  # each worker's CPU, said as it ends
    assert sum(int(m.split(" over ")[1].split()[0]) for m in ends) == 5  # every piece run once


def test_a_method_asked_for_twice_runs_twice() -> None:
    options = SimpleNamespace(methods=("z3", "symbolic", "z3"))
    assert [r.split(":")[0] for r in suite_jobs.run(options, print, RUNNERS, 2)] == [
        "z3", "z3", "symbolic", "symbolic", "z3", "z3"]


def test_the_first_error_in_serial_order_is_raised() -> None:
    runners = {**RUNNERS, "model": runner("model", 0.5, fails=True), "z3": runner("z3", fails=True)}
    options = SimpleNamespace(methods=("model", "symbolic", "z3"))
    with pytest.raises(ValueError, match="model failed"):  # z3's error came first, but model runs first serially
        suite_jobs.run(options, print, runners, 2)


def test_a_worker_that_dies_is_an_error_not_a_hang() -> None:
    def dies(options: Any, say: Any) -> list[str]:
        posix._exit(3)

    options = SimpleNamespace(methods=("model", "symbolic"))
    with pytest.raises(RuntimeError, match="exit status 3"):
        suite_jobs.run(options, print, {**RUNNERS, "model": dies}, 2)


def test_ctrl_c_stops_prove_and_every_worker() -> None:
    proc, workers = interrupted_job(["prove", "--methods", "z3,crosshair", "--jobs", "2"], 2)
    out, err = proc.communicate(timeout=EVENT_LIMIT_S)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "stallfree prove: interrupted", err[-2000:]
    assert "Traceback" not in err and "claims hold" not in out
    wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") and _alive(pid) for pid in workers), "every worker gone")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


FINALIZER_STOP = """
import signal, sys, time
from stallfree.proofs import suite_jobs as jobs
signal.signal(signal.SIGTERM, jobs._stop_worker)
if sys.argv[1] == "hook":
    sys.unraisablehook = jobs._stop_again
class Finalized:
    def __del__(self):
        raise jobs._Stopped  # a stop landing in a finalizer, as in a Z3 term's __del__
try:
    f = Finalized()
    del f
    for _ in range(5_000):  # the stop is raised again within a few switches of thread; none: it ran on
        time.sleep(0.001)
    print("ran on")
except jobs._Stopped:
    print("stopped")
"""


@pytest.mark.parametrize("hook", ["hook", "none"])
def test_a_stop_raised_in_a_finalizer_still_stops_the_worker_and_prints_nothing(hook: str) -> None:
    """Seen under Ctrl-C: a worker's stop landed in Z3's `AstRef.__del__`, Python printed it as a traceback
    and the worker ran on until killed. With the worker's hook the stop is raised again where it ends the
    worker; without it (the control) the traceback and the run-on are what this test would catch."""
    done = subprocess.run([sys.executable, "-c", FINALIZER_STOP, hook], capture_output=True, text=True,
                          env=env(), timeout=EVENT_LIMIT_S)
    if hook == "hook":
        assert (done.stdout.strip(), done.stderr) == ("stopped", ""), done.stderr
    else:
        assert done.stdout.strip() == "ran on" and "Traceback" in done.stderr
