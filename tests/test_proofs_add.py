"""ADD (code) (`proofs/smt/code_add.py`): the reference's own add() on symbolic values, every path,
from every state of at most N requests (ended records included). NEVER-FIT, FCFS, KV, END and PROGRESS
hold of the reference, and each planted add() bug is refuted under its rule, through the theorem and
through `stallfree prove --scheduler`."""

from __future__ import annotations

import pytest

from stallfree.main import main
from stallfree.proofs.contracts.planted import PlantedNeverFit
from stallfree.proofs.smt import code_add
from stallfree.proofs.smt.add_planted import AddAtFront, ForgetEndedFirst, TakeTakenRid
from stallfree.proofs.smt.code_theorems import not_applicable
from stallfree.reference import Scheduler
from stallfree.spec import types as spec_types
from stallfree.spec.verdict import Verdict

# Each control: the rules its counterexample must name (any of them), and what the first one shows.
CONTROLS = {
    PlantedNeverFit: ({"NEVER-FIT"}, "accepted a request it must refuse"),
    AddAtFront: ({"FCFS"}, "the line"),
    ForgetEndedFirst: ({"NEVER-FIT"}, "a refused add"),
    TakeTakenRid: ({"NEVER-FIT"}, "is taken by a request that has not ended"),
}


@pytest.mark.parametrize("n", [1, 2, 3])
def test_add_holds_of_the_reference_on_every_path(n: int) -> None:
    outcome = code_add.prove(Scheduler, n, pending_n=1)
    assert outcome.verdict is Verdict.HOLDS, outcome.detail
    assert outcome.paths > outcome.states > 0  # the hypothesis refuses some states: it is not vacuous
    assert f"{outcome.paths} paths" in outcome.detail


def test_more_requests_mean_more_paths() -> None:
    counts = [code_add.prove(Scheduler, n, pending_n=0).paths for n in (1, 2)]
    assert counts[0] < counts[1]


@pytest.mark.parametrize("control", list(CONTROLS), ids=lambda c: c.__name__)
def test_each_planted_add_is_refuted_under_its_rule(control: type) -> None:
    rules, shown = CONTROLS[control]
    assert not_applicable(control) is None  # it keeps the reference's fields: the theorem speaks of it
    outcome = code_add.prove(control, 1, pending_n=0)
    assert outcome.verdict is Verdict.BROKEN, outcome.detail
    assert rules & set(outcome.broken), (outcome.broken, outcome.detail)
    assert shown in outcome.detail, outcome.detail
    assert outcome.counterexample is not None and outcome.counterexample["values"]


def test_forgetting_ended_rids_is_seen_only_with_an_ended_record() -> None:
    """ForgetEndedFirst's counterexample starts from a state with a request ended on the last step."""
    outcome = code_add.prove(ForgetEndedFirst, 1, pending_n=0)
    assert "1 ended" in outcome.counterexample["shape"], outcome.counterexample


def test_a_refused_add_of_an_invalid_length_is_a_path_too() -> None:
    """The new request's lengths are unconstrained: a length of 0 is judged (refused, nothing changed)."""
    outcome = code_add.prove(ForgetEndedFirst, 1, pending_n=0)
    values = outcome.counterexample["values"]
    assert values["new_prompt_len"] < 1 or values["new_max_new"] < 1 or \
        values["new_prompt_len"] + values["new_max_new"] > values["K"], values


class HashesThePrompt(Scheduler):
    """Looks the prompt length up in a dict: a symbolic value cannot be hashed, so nothing is claimed."""

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        {prompt_len: None}  # noqa: B018
        super().add(rid, prompt_len, max_new)


def test_code_that_cannot_run_symbolically_is_unknown_not_holding() -> None:
    outcome = code_add.prove(HashesThePrompt, 1, pending_n=0)
    assert outcome.verdict is Verdict.UNKNOWN and "cannot run symbolically" in outcome.detail


def test_the_validation_is_restored_after_the_run() -> None:
    original = spec_types.check_int
    code_add.prove(HashesThePrompt, 1, pending_n=0)
    assert spec_types.check_int is original
    with pytest.raises(spec_types.FieldTypeError):
        spec_types.Request(0, True, 1)  # type: ignore[arg-type]


def test_prove_scheduler_exits_1_on_a_planted_add_through_the_add_row(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "stallfree.proofs.smt.add_planted:AddAtFront"
    assert main(["prove", "--methods", "symbolic", "--code-requests", "1", "--scheduler", spec]) == 1
    out = capsys.readouterr().out
    broken = [line for line in out.splitlines() if line.startswith("ADD (code)")]
    assert broken and "BROKEN" in broken[0], out
    steps = [line for line in out.splitlines() if line.startswith("STEP (code)")]
    assert steps and "holds" in steps[0], out  # its schedule() is the reference's: only the add row fails
