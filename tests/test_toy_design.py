"""A design added from this module alone: one rule, one scheduler, one fault, one `register` call.

The toy design runs one request at a time: its rule ONE-AT-A-TIME widens WORK-CONSERVING (a second
request may wait while a slot is free); its scheduler is the reference held to one slot; its fault is
the reference itself, which admits a second request while one runs. The kit (conform, in its worker
process), trace, the model checker and the simulator run it through the registry, with no edit
anywhere else, and each catches the fault by the toy's rule."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from stallfree.reference import Scheduler as Reference
from stallfree.spec import Config, Kind, Rule, RuleViolation, Shadow, StepFacts, registry
from stallfree.spec.contract import Contract
from stallfree.spec.reservation.contract import ContractMonitor, keeping

RULE = "ONE-AT-A-TIME"


def one_at_a_time(s: Shadow, f: StepFacts) -> str | None:
    """ONE-AT-A-TIME, judged on the plan: an admission only with nothing running, one at most."""
    if f.admitted and (s.running or len(f.admitted) > 1):
        return f"admitted rid {f.admitted[-1].track.rid} while {len(s.running) + len(f.admitted) - 1} request(s) run"
    return None


class Toy(Reference):
    """The reference with one slot, whatever S it is given."""

    design = "toy"

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget=token_budget, max_seqs=1, kv_tokens=kv_tokens)


class Fault(Reference):
    """Wrong on purpose: the reference with all S slots, so a second request runs beside the first."""

    design = "toy"


TOY = Contract(
    "toy", keeping("WORK-CONSERVING", extra=(Rule(RULE, Kind.POLICY, "at most one request runs at a time.",
                                                 plan_check=one_at_a_time),)),
    widens=(("WORK-CONSERVING", RULE),), monitor=ContractMonitor,
    design="toy", scheduler=f"{__name__}:Toy", faults=f"{__name__}:FAULTS",
    held=registry.RESERVATION.held,
)
FAULTS = {RULE: Fault}
REGISTER = "STALLFREE_TEST_TOY_DESIGN"  # set while a test runs: the kit's worker, importing this module as
if os.environ.get(REGISTER) and "toy" not in registry.names():  # its target, registers the toy there too
    registry.register(TOY)


@pytest.fixture(autouse=True)
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Contract]:
    """The toy registered for one test, and gone after it (no other test sees it)."""
    monkeypatch.setenv(REGISTER, "1")
    registry.register(TOY)
    yield TOY
    registry.unregister("toy")


def test_the_registry_finds_the_toy_by_the_design_its_scheduler_declares() -> None:
    assert registry.of(Toy) is TOY and TOY.is_design and "toy" in registry.names()
    assert RULE in TOY.ids and "WORK-CONSERVING" not in TOY.ids


def test_the_kit_conforms_the_toy_and_catches_its_fault() -> None:
    from stallfree.conformance.kit import conform

    kept = conform(f"{__name__}:Toy", profile="toy", examples=3)
    assert kept.ok and kept.verdicts[RULE] == "holds" and kept.design == "toy"
    broken = conform(f"{__name__}:Fault", profile="toy", examples=3)
    assert broken.verdicts[RULE] == "broken" and RULE in broken.counterexamples


def two_requests(step: int = 0) -> list[str]:
    return ["--request", f"0:4:3@{step}", "--request", f"1:4:3@{step}", "--budget", "8", "--max-seqs", "2"]


def test_trace_judges_the_toy_by_its_rule(capsys: pytest.CaptureFixture[str]) -> None:
    from stallfree.main import main

    assert main(["trace", "--scheduler", f"{__name__}:Toy", *two_requests()]) == 0
    out = capsys.readouterr().out
    assert f"{RULE}" in out and "WORK-CONSERVING" not in out
    assert main(["trace", "--scheduler", f"{__name__}:Fault", *two_requests()]) == 1
    assert f"{RULE}" in capsys.readouterr().out


def test_the_model_checker_explores_the_toy_and_finds_its_fault() -> None:
    from stallfree.proofs.explicit.bounds import Bounds
    from stallfree.proofs.explicit.design import Reservation
    from stallfree.proofs.explicit.modelcheck import check

    bounds = Bounds(token_budget=4, max_seqs=2, kv_tokens=8, num_requests=2, max_prompt=2, max_new=2)
    held = check(bounds, Toy, design=Reservation(bounds, TOY))
    assert held.complete and held.counterexample is None and held.states > 1
    found = check(bounds, Fault, design=Reservation(bounds, TOY))
    assert found.counterexample is not None and found.counterexample.rule == RULE


def test_the_simulator_checks_the_toy_and_stops_at_its_fault() -> None:
    from stallfree.costs import Deployment, Roofline
    from stallfree.costs.presets import gpu, model
    from stallfree.sim.designs import run_design
    from stallfree.sim.simulator import simulate
    from stallfree.sim.trace import Trace, TraceRequest

    trace = Trace("toy", tuple(TraceRequest(rid, 0.0, 8, 4) for rid in range(3)))
    config = Config(16, 2, 64)
    roofline = Roofline(Deployment(model("llama-3.3-70b"), gpu("h100-sxm"), 4, "fp8", "bf16"), "full")
    result = simulate(trace, Toy, config, roofline, "toy", check=True)
    assert len(result.streams) == 3
    assert run_design(TOY, trace, config, roofline).stats.max_running == 1  # its reference scheduler, one slot
    with pytest.raises(RuleViolation) as caught:
        simulate(trace, Fault, config, roofline, "toy", check=True)
    assert caught.value.rule == RULE


def test_a_name_taken_is_refused_and_the_fault_table_names_the_rule() -> None:
    with pytest.raises(ValueError, match="contract 'toy' is already registered"):
        registry.register(TOY)
    import importlib

    from stallfree.spec.utils.loader import load_target

    module, _, table = TOY.faults.partition(":")
    assert getattr(importlib.import_module(module), table)[RULE] is Fault and load_target(TOY.scheduler) is Toy

