"""Liveness as users mean it: every request finishes within the work ahead of it at its arrival plus
its own, under arrivals that never stop (weak fairness of Step). Model-checked on lassos and proved
as a ranking function in Z3; both fail on a last-in-first-out scheduler and on one that keeps first
come first served but lets short requests starve a long prompt. And in steps: floor(P / B) + D, which a
scheduler idling one step in three breaks though it keeps the work bound."""

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
from stallfree.spec.verdict import Verdict

BOUND = Bounds.parse("2,2,8,2,3,2")  # at most 2 waiting at once; arrivals never stop
LIVENESS = next(t for t in THEOREMS if t.name == "LIVENESS")


def test_the_reference_meets_the_per_request_bound_under_endless_arrivals() -> None:
    result = starvation.check(BOUND)
    assert result.holds and result.states > 5_000
    assert result.worst_margin == 0  # floor(P / B) + D is met exactly by some behaviour: it cannot be lowered


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
        assert prove(LIVENESS, MUTANTS[name](), 4).verdict is Verdict.BROKEN, name


def test_prove_fault_liveness_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--fault", "LIVENESS", "--methods", "model", "--bound", "2,2,6,2,2,2"]) == 1
    out = capsys.readouterr().out
    assert "LIVENESS" in out and "BROKEN" in out


# -- the bound in steps: floor(P / B) + D (LIVENESS-STEPS) ------------------------------------------


def test_idling_one_step_in_three_breaks_the_bound_in_steps_not_the_work_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """IdleOneInThree, its step counter declared as hidden state, breaks floor(P / B) + D; under the
    weaker W + w (units of work) it passes at 2,2,8,2,2,2, which is why the bound is in steps."""
    from stallfree.faults.starving import IdleOneInThree, idle_phase

    small = Bounds.parse("2,2,8,2,2,2")
    ce = starvation.check(small, IdleOneInThree, hidden=idle_phase).counterexample
    assert ce is not None and ce.rule == "LIVENESS"
    play(ce.workload, Scheduler)  # the same arrivals keep every rule on the reference

    def work_bound(monitor, prompt_len, max_new):  # type: ignore[no-untyped-def]
        prompts, tokens = starvation.ahead(monitor)
        return prompts + tokens + prompt_len + max_new

    monkeypatch.setattr(starvation, "deadline", work_bound)
    assert starvation.check(small, IdleOneInThree, hidden=idle_phase).holds


def test_the_hidden_state_is_in_the_liveness_key() -> None:
    """Declared, the idler's counter splits states the shadow would merge: more states, same verdict."""
    from stallfree.faults.starving import IdleOneInThree, idle_phase

    bare = starvation.check(BOUND, IdleOneInThree, max_states=200_000)
    declared = starvation.check(BOUND, IdleOneInThree, hidden=idle_phase, max_states=200_000)
    assert bare.counterexample is not None and declared.counterexample is not None
    with_counter = starvation.check(Bounds.parse("2,2,6,1,2,1"), Scheduler, hidden=lambda s: s.num_steps % 3)
    without = starvation.check(Bounds.parse("2,2,6,1,2,1"), Scheduler)
    assert with_counter.holds and without.holds and with_counter.states > without.states


def test_the_ranking_in_steps_is_proved_and_fails_where_the_work_ranking_does_not() -> None:
    from stallfree.proofs.smt.liveness_steps import LIVENESS_STEPS, OneTokenPrefill

    assert prove(LIVENESS_STEPS, None, 6).holds
    for name in ("LifoAdmission", "AdmitBeforePartial"):
        assert prove(LIVENESS_STEPS, MUTANTS[name](), 4).verdict is Verdict.BROKEN, name
    assert prove(LIVENESS_STEPS, OneTokenPrefill(), 4).verdict is Verdict.BROKEN
    assert prove(LIVENESS, OneTokenPrefill(), 4).holds  # the weaker ranking accepts it


def test_the_suites_liveness_row_honours_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """suite.liveness_row passes the declared hidden state to the lasso check (its verdict is BROKEN
    with the counter in the key, as without; the row names the bound in steps)."""
    from stallfree.faults.starving import IdleOneInThree, idle_phase
    from stallfree.proofs import suite

    options = suite.Options(factory=IdleOneInThree, hidden=idle_phase, liveness_bound=BOUND)
    seen: list[object] = []
    real = starvation.check

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(args[3] if len(args) > 3 else kwargs.get("hidden"))
        return real(*args, **kwargs)

    monkeypatch.setattr(starvation, "check", spy)
    row = suite.liveness_row(options, lambda _: None)
    assert seen == [idle_phase] and row.result == suite.BROKEN and "floor(P / B) + D" in row.detail
