"""FOLD of the code: the reference's own schedule() plans each request as it plans the state cut to that
request and those before it, never looking at one after it. Symbolically at N = 3 (`smt/code_fold.py`,
every path) and on the states of stepped runs at N = 12 (`explicit/fold_stepwise.py`, a sample). A
look-ahead within three requests is refuted by both; one three places behind the head only by the
stepwise check, which the symbolic check's bound cannot see and says so (its N is in the row)."""

from __future__ import annotations

import pytest

from stallfree.main import main
from stallfree.proofs.explicit import fold_stepwise
from stallfree.proofs.smt import code_fold
from stallfree.proofs.smt.code_fold_planted import TAIL_COUNT, planted
from stallfree.proofs.smt.code_theorems import not_applicable
from stallfree.proofs.smt.fold_planted import EarlyLookAhead, LateLookAhead
from stallfree.reference import Scheduler
from stallfree.spec.verdict import Verdict


@pytest.mark.parametrize("n", [2, 3])
def test_fold_holds_of_the_reference_on_every_path(n: int) -> None:
    outcome = code_fold.prove(Scheduler, n)
    assert outcome.verdict is Verdict.HOLDS, outcome.detail
    assert outcome.paths > outcome.states > 0


def test_a_state_of_one_request_has_no_cut_and_is_not_judged() -> None:
    outcome = code_fold.prove(Scheduler, 1)
    assert outcome.verdict is Verdict.NOT_JUDGED and "vacuous" in outcome.detail


def test_an_early_look_ahead_is_refuted_symbolically() -> None:
    assert not_applicable(EarlyLookAhead) is None
    outcome = code_fold.prove(EarlyLookAhead, 2)
    assert outcome.verdict is Verdict.BROKEN and outcome.broken == ["FOLD"], outcome.detail
    assert "planned alone" in outcome.detail and outcome.counterexample["values"]


def test_a_late_look_ahead_is_past_the_symbolic_bound() -> None:
    """Three places behind the head needs four waiting requests: at N = 3 it is a fold, and the row says N<=3."""
    assert code_fold.prove(LateLookAhead, 3).verdict is Verdict.HOLDS


def test_the_stepwise_check_does_not_refute_the_reference_and_never_says_holds() -> None:
    outcome = fold_stepwise.check(Scheduler)
    assert outcome.verdict is Verdict.NOT_REFUTED, outcome.detail
    assert outcome.full > 0  # states of twelve requests were reached, each cut


@pytest.mark.parametrize("control", [EarlyLookAhead, LateLookAhead], ids=lambda c: c.__name__)
def test_the_stepwise_check_refutes_each_look_ahead(control: type) -> None:
    outcome = fold_stepwise.check(control)
    assert outcome.verdict is Verdict.BROKEN and outcome.broken == ["FOLD"], outcome.detail
    assert "planned alone" in outcome.detail


def test_a_late_look_ahead_is_refuted_only_with_four_waiting() -> None:
    outcome = fold_stepwise.check(LateLookAhead)
    line = outcome.detail.split("line (rid, prompt_len, max_new) ")[1].split("]:")[0]
    assert line.count("(") >= 4, outcome.detail


class NeverReachesTwelve(Scheduler):
    """Refuses every request past the fourth: no run reaches twelve at once."""

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        if len(self._waiting) + len(self._running) >= 4:
            raise ValueError(f"rid {rid}: full (4 requests)")
        super().add(rid, prompt_len, max_new)


def test_runs_that_never_reach_the_bound_are_not_judged() -> None:
    outcome = fold_stepwise.check(NeverReachesTwelve)
    assert outcome.verdict is Verdict.NOT_JUDGED and "vacuous" in outcome.detail


class HashesTheBudget(Scheduler):
    """Looks its budget up in a dict: symbolic values cannot be hashed, so nothing can be claimed."""

    def schedule(self):  # type: ignore[no-untyped-def]
        {self.config.token_budget: None}  # noqa: B018
        return super().schedule()


def test_code_that_cannot_run_symbolically_is_unknown_not_holding() -> None:
    outcome = code_fold.prove(HashesTheBudget, 2)
    assert outcome.verdict is Verdict.UNKNOWN and "cannot run symbolically" in outcome.detail


def test_prove_scheduler_exits_1_on_the_late_look_ahead(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "stallfree.proofs.smt.fold_planted:LateLookAhead"
    assert main(["prove", "--methods", "symbolic", "--code-requests", "1", "--scheduler", spec]) == 1
    out = capsys.readouterr().out
    stepwise = [line for line in out.splitlines() if line.startswith("FOLD (code, stepwise)")]
    assert stepwise and "BROKEN" in stepwise[0], out


DropPartialAtFour = planted("DropPartialAtFour", "The partial prompt is not continued once four run.", (
    (TAIL_COUNT, f"max(0, {TAIL_COUNT} - len(self._running) // 4)"),))


def test_a_run_reaching_a_state_that_breaks_a_post_condition_is_broken_on_its_rule_not_a_crash() -> None:
    """DropPartialAtFour is a fold, but its runs reach two partial prompts: the stepped state breaks
    ONE-PARTIAL, so its cuts are no states; the row says BROKEN on that rule, with the run, and raises nothing."""
    outcome = fold_stepwise.check(DropPartialAtFour)
    assert outcome.verdict is Verdict.BROKEN and outcome.broken == ["ONE-PARTIAL"], outcome.detail
    assert "the run reached a state that breaks ONE-PARTIAL" in outcome.detail
    assert outcome.counterexample is not None and outcome.counterexample["rule"] == "ONE-PARTIAL"


def test_a_cut_the_post_conditions_refuse_is_not_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A state one of whose cuts is no state of the scheduler (here the cut made wrong on purpose: it
    keeps one KV token of what it removes) is not judged: the row reads unknown, never holds or crashes."""
    honest = fold_stepwise.cut

    def keeps_a_token(s: object, k: int) -> object:
        t = honest(s, k)
        t._free_kv -= 1  # type: ignore[attr-defined]
        return t

    monkeypatch.setattr(fold_stepwise, "cut", keeps_a_token)
    outcome = fold_stepwise.check(Scheduler)
    assert outcome.verdict is Verdict.UNKNOWN and outcome.broken == [], outcome.detail
    assert "is no state of the scheduler" in outcome.detail and "not judged" in outcome.detail
    assert outcome.counterexample is None
