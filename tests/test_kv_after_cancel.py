"""KV after a cancel of a running request, as the contract words it: "its reservation is back by the
next schedule()". A scheduler may return it at once (the reference) or at that schedule()
(`ReturnsAtNextSchedule`): both keep KV, through the monitor, the trace command and the state machine;
one that never returns it (`NeverReturns`, and the catalog's `faults.lifecycle.CancelKeepsKV`) breaks
KV, and so does one that returns it a step late (`ReturnsAfterNextSchedule`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stallfree.faults.lifecycle import CancelKeepsKV
from stallfree.main import main
from stallfree.reference import Scheduler
from stallfree.spec import Config, Monitor, RuleViolation
from stallfree.variants.stepwise import Stepwise, StepwiseSequence

CONFIG = Config(token_budget=16, max_seqs=4, kv_tokens=256)


class ReturnsAtNextSchedule(Stepwise):
    """Keeps the contract: a cancelled running request leaves the batch when its cancel takes effect
    (at once, or when the pending plan completes), and its reservation comes back at the start of the
    next schedule() (as a server that frees KV in its step loop does)."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.owed = 0

    def on_cancel(self, seq: StepwiseSequence) -> None:
        del self.running[seq.rid]
        self.owed += seq.request.reservation

    def complete(self, plan: list[tuple[int, int]], stopped: object = ()) -> list[int]:  # type: ignore[override]
        cancelling, self.cancelling = self.cancelling, []
        emitted = super().complete(plan, stopped)  # type: ignore[arg-type]
        for seq in cancelling:
            if seq.rid in self.running:
                self.on_cancel(seq)
        return emitted

    def schedule(self) -> list[tuple[int, int]]:
        self.free_kv += self.owed
        self.owed = 0
        return super().schedule()


class NeverReturns(ReturnsAtNextSchedule):
    """Breaks KV: a cancelled running request's reservation never comes back."""

    def schedule(self) -> list[tuple[int, int]]:
        self.owed = 0
        return Stepwise.schedule(self)


class ReturnsAfterNextSchedule(ReturnsAtNextSchedule):
    """Breaks KV: the reservation comes back a step late, at the schedule() after the next one."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.later = 0

    def schedule(self) -> list[tuple[int, int]]:
        self.free_kv += self.later
        self.later, self.owed = self.owed, 0
        return Stepwise.schedule(self)


def cancel_a_running_request(factory: type, pending: bool = False) -> Monitor:
    """Two requests run; rid 0 is cancelled (between steps, or while a plan is pending); then steps
    until idle."""
    scheduler = factory(CONFIG.token_budget, CONFIG.max_seqs, CONFIG.kv_tokens)
    m = Monitor(scheduler, CONFIG)
    m.add(0, 8, 100)
    m.add(1, 4, 20)
    m.step()
    if pending:
        m.plan()
        assert m.cancel(0)
        m.complete()
    else:
        assert m.cancel(0)
    while not m.shadow.is_idle:
        m.step()
    m.step()  # the empty step: all K free
    return m


@pytest.mark.parametrize("pending", [False, True], ids=["between steps", "plan pending"])
@pytest.mark.parametrize("factory", [Scheduler, ReturnsAtNextSchedule], ids=["at once", "at the next schedule"])
def test_KV_a_cancelled_reservation_back_at_once_or_at_the_next_schedule_holds(factory: type, pending: bool) -> None:
    m = cancel_a_running_request(factory, pending)
    assert m.scheduler.free_kv == CONFIG.kv_tokens


@pytest.mark.parametrize("pending", [False, True], ids=["between steps", "plan pending"])
@pytest.mark.parametrize("factory", [NeverReturns, ReturnsAfterNextSchedule], ids=["never", "a step late"])
def test_KV_a_cancelled_reservation_not_back_by_the_next_schedule_is_broken(factory: type, pending: bool) -> None:
    with pytest.raises(RuleViolation) as raised:
        cancel_a_running_request(factory, pending)
    assert raised.value.rule == "KV", raised.value
    assert "not back by the next schedule()" in str(raised.value), raised.value


def test_KV_at_the_cancel_a_free_kv_beyond_the_running_reservations_is_broken() -> None:
    """Between the cancel and the next schedule() the shown free KV may lag by the cancelled
    reservation, no more and never ahead."""

    class ReturnsTwice(Stepwise):
        def on_cancel(self, seq: StepwiseSequence) -> None:
            self.release(seq)
            self.free_kv += seq.request.reservation

    m = Monitor(ReturnsTwice(CONFIG.token_budget, CONFIG.max_seqs, CONFIG.kv_tokens), CONFIG)
    m.add(0, 8, 100)
    m.step()
    with pytest.raises(RuleViolation, match=r"^KV .*after cancel\(0\) the scheduler shows free_kv=364"):
        m.cancel(0)


def trace(tmp_path: Path, scheduler: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    workload = {"config": {"token_budget": 16, "max_seqs": 4, "kv_tokens": 256},
                "requests": [{"rid": 0, "prompt_len": 8, "max_new": 30, "arrival_step": 0},
                             {"rid": 1, "prompt_len": 4, "max_new": 6, "arrival_step": 0},
                             {"rid": 2, "prompt_len": 200, "max_new": 8, "arrival_step": 3}],
                "cancels": [{"rid": 0, "step": 2}, {"rid": 1, "step": 4, "pending": True}]}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(workload))
    capsys.readouterr()
    status = main(["trace", "--workload", str(path), "--scheduler", scheduler, "--rules", "KV"])
    return status, capsys.readouterr().out


def test_KV_trace_of_a_scheduler_returning_at_the_next_schedule_holds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = trace(tmp_path, f"{__name__}:ReturnsAtNextSchedule", capsys)
    assert status == 0, out
    assert "KV" in out and "KV BROKEN" not in out.replace("  ", " ")


def test_KV_trace_of_a_scheduler_that_keeps_a_cancelled_reservation_is_broken(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = trace(tmp_path, "stallfree.faults.lifecycle:CancelKeepsKV", capsys)
    assert status == 1, out
    assert any(line.startswith("KV") and "BROKEN" in line for line in out.splitlines()), out


def test_KV_the_state_machine_accepts_a_return_at_the_next_schedule() -> None:
    pytest.importorskip("hypothesis")
    from hypothesis import settings
    from hypothesis.stateful import run_state_machine_as_test

    from stallfree.testing.machine import machine_for

    run_state_machine_as_test(machine_for(ReturnsAtNextSchedule),
                              settings=settings(max_examples=40, derandomize=True, deadline=None, database=None))


def test_KV_the_state_machine_catches_a_cancelled_reservation_kept() -> None:
    pytest.importorskip("hypothesis")
    from hypothesis import Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    from stallfree.testing.machine import machine_for

    with pytest.raises(RuleViolation, match=r"^KV .*not back by the next schedule"):
        run_state_machine_as_test(machine_for(CancelKeepsKV), settings=settings(
            max_examples=200, derandomize=True, deadline=None, database=None, print_blob=False,
            phases=[Phase.generate]))  # found, not shrunk: the rule is the point here
