"""stallfree's own schedulers are judged in the kit's process (conformance/isolation/inprocess.py);
every other target, and an own one off the main thread, in a worker. In process, a Ctrl-C during a run
stops the kit (KeyboardInterrupt), never reads as the target's crash."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest

from stallfree.conformance.isolation.inprocess import InProcess, sandbox_for
from stallfree.conformance.isolation.outcome import CRASH
from stallfree.conformance.isolation.sandbox import Sandbox
from stallfree.conformance.isolation.worker import run_one
from stallfree.reference import Scheduler
from stallfree.spec import Arrival, Config, Workload, registry

WORKLOAD = Workload(Config(8, 2, 64), (Arrival(0, 20, 6, 0), Arrival(1, 30, 5, 2)))


class Interrupted(Scheduler):
    """Ctrl-C arrives while its schedule() runs."""

    def schedule(self) -> Any:
        os.kill(os.getpid(), signal.SIGINT)
        return super().schedule()


def test_own_targets_run_in_process_and_others_in_a_worker() -> None:
    assert isinstance(sandbox_for("stallfree.reference:Scheduler"), InProcess)
    assert isinstance(sandbox_for("prefill_first:PrefillFirst"), Sandbox)
    assert isinstance(sandbox_for("hostile_isolated:Forks"), Sandbox)


def test_an_own_target_off_the_main_thread_runs_in_a_worker() -> None:
    found: list[object] = []
    thread = threading.Thread(target=lambda: found.append(sandbox_for("stallfree.reference:Scheduler")))
    thread.start()
    thread.join()
    assert isinstance(found[0], Sandbox)


def test_in_process_a_run_is_judged_as_in_the_worker() -> None:
    with InProcess("stallfree.reference:Scheduler") as here, Sandbox("stallfree.reference:Scheduler") as there:
        assert here.capabilities == there.capabilities and here.not_applicable == there.not_applicable
        assert here.run(WORKLOAD, ["BUDGET", "FCFS"]) == there.run(WORKLOAD, ["BUDGET", "FCFS"])


def test_in_process_a_ctrl_c_stops_the_kit() -> None:
    with InProcess("stallfree.reference:Scheduler") as here:
        here.factory = Interrupted
        with pytest.raises(KeyboardInterrupt):
            here.run(WORKLOAD, ["BUDGET"])


def test_the_control_the_same_ctrl_c_through_run_one_alone_is_read_as_a_crash() -> None:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        outcome = run_one(Interrupted, WORKLOAD, ["BUDGET"], 2.0, [], registry.RESERVATION)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert outcome.rule == CRASH and "KeyboardInterrupt" in outcome.message
