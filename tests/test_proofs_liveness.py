"""Liveness as users mean it: every request finishes within the work ahead of it at its arrival plus
its own, under arrivals that never stop (weak fairness of Step). Model-checked on lassos and proved
as a ranking function in Z3; both fail on a last-in-first-out scheduler and on one that keeps first
come first served but lets short requests starve a long prompt."""

from __future__ import annotations

import pytest

from stallfree.faults.starving import STARVING
from stallfree.main import main
from stallfree.proofs.explicit import starvation
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.smt.mutants import MUTANTS
from stallfree.proofs.smt.theorems import THEOREMS, prove
from stallfree.reference import Scheduler
from stallfree.spec import play

BOUND = Bounds.parse("2,2,8,2,3,2")  # at most 2 waiting at once; arrivals never stop
LIVENESS = next(t for t in THEOREMS if t.name == "LIVENESS")


def test_the_reference_meets_the_per_request_bound_under_endless_arrivals() -> None:
    result = starvation.check(BOUND)
    assert result.holds and result.states > 5_000
    assert result.worst_margin is not None and result.worst_margin >= 0


@pytest.mark.parametrize("name", list(STARVING))
def test_a_starving_scheduler_breaks_the_bound(name: str) -> None:
    result = starvation.check(BOUND, STARVING[name])
    ce = result.counterexample
    assert ce is not None and ce.rule == "LIVENESS"
    play(ce.workload, Scheduler)  # the same arrivals, on the reference, keep every rule
    # The trace shows the whole behaviour, state by state, up to the step the bound ran out.
    assert sum(line.startswith("  state ") for line in ce.trace) == ce.num_steps
    assert all("plan [" in line for line in ce.trace if line.startswith("  step "))


def test_the_ranking_function_is_proved_and_fails_on_starving_policies() -> None:
    assert prove(LIVENESS, None, 4).holds
    for name in ("LifoAdmission", "AdmitBeforePartial"):
        assert prove(LIVENESS, MUTANTS[name](), 4).result == "counterexample", name


def test_prove_fault_liveness_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--fault", "LIVENESS", "--methods", "model", "--bound", "2,2,6,2,2,2"]) == 1
    out = capsys.readouterr().out
    assert "LIVENESS" in out and "BROKEN" in out
