"""Tests written to kill mutants of spec/ that the contract's other tests let survive
(docs/mutation.md lists each one): what the monitor's messages say, the registry's statements,
plan entries that are not ints, and workload JSON errors, each naming the field and the value."""

from __future__ import annotations

import json
from enum import IntEnum

import pytest

from stallfree.spec import (
    RULES,
    Config,
    FieldTypeError,
    InvalidField,
    Monitor,
    RuleViolation,
    Workload,
    rules,
)
from stallfree.spec.workload import MAX_ARRIVAL_STEP, Arrival

CONFIG = {"token_budget": 8, "max_seqs": 2, "kv_tokens": 64}


class Scripted:
    """A plain-protocol scheduler that returns the given plans and emissions, one per step."""

    def __init__(self, plans: list[list[tuple[object, object]]], emitted: list[list[int]]) -> None:
        self.plans, self.emitted, self.step = plans, emitted, 0

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        pass

    def schedule(self) -> list[tuple[object, object]]:
        return self.plans[self.step]

    def complete(self, plan: object) -> list[int]:
        self.step += 1
        return self.emitted[self.step - 1]


def monitor(
    plans: list[list[tuple[object, object]]], emitted: list[list[int]], only: str | None = None,
) -> Monitor:
    return Monitor(Scripted(plans, emitted), Config(**CONFIG), None if only is None else [only])


# -- the monitor's messages name the facts ---------------------------------------------------------


def test_RuleViolation_keeps_rule_step_and_message() -> None:
    error = RuleViolation("KV", 3, "too much")
    assert (error.rule, error.step, error.message, str(error)) == ("KV", 3, "too much", "KV at step 3: too much")


def test_FIRST_TOKEN_early_token_names_the_positions_run() -> None:
    m = monitor([[(1, 3)]], [[1]], only="FIRST-TOKEN")
    m.add(1, 10, 2)
    with pytest.raises(RuleViolation, match=r"^FIRST-TOKEN at step 0: rid 1 emitted a token after prompt "
                       r"positions \[0, 3\) of 10: before its prompt was done$"):
        m.step()


def test_TOKENS_two_tokens_in_one_step_names_the_rid() -> None:
    m = monitor([[(1, 4), (2, 4)]], [[2, 1, 1]])
    m.add(1, 4, 3)
    m.add(2, 4, 3)
    with pytest.raises(RuleViolation, match=r"^TOKENS at step 0: rid 1 emitted more than one token in one step$"):
        m.step()


def test_every_rule_statement_is_the_first_paragraph_of_its_predicate_after_the_ID() -> None:
    # Called at test time: the registry itself is built once, at import.
    for rule in RULES:
        predicate = rule.plan_check or rule.done_check or rules.never_fit
        assert rules._statement(predicate) == rule.statement
        assert rule.statement and ":" not in rule.statement[:2] and "\n" not in rule.statement
    assert rules._statement(rules.budget) == (
        "the tokens of a plan sum to at most the token budget B; each decode counts 1."
    )


# -- plan entries must be ints, and bools are not ints ----------------------------------------------


def test_PROTOCOL_plan_entry_of_bools_is_refused() -> None:
    m = monitor([[(True, True)]], [[]])
    m.add(1, 4, 1)
    with pytest.raises(RuleViolation, match=r"rid and n must be ints"):
        m.step()


class Rid(IntEnum):
    ONE = 1


def test_plan_entry_of_an_int_subclass_is_an_int() -> None:
    m = monitor([[(Rid.ONE, 4)]], [[1]])
    m.add(1, 4, 1)
    facts = m.step()
    assert facts.plan == [(1, 4)]


# -- workload JSON: errors name the field path and the value -----------------------------------------


def load(data: object) -> Workload:
    return Workload.loads(json.dumps(data))


def test_workload_without_requests_is_empty_and_arrival_step_defaults_to_0() -> None:
    assert load({"config": CONFIG}).requests == ()
    (arrival,) = load({"config": CONFIG, "requests": [{"rid": 0, "prompt_len": 2, "max_new": 1}]}).requests
    assert arrival.arrival_step == 0


@pytest.mark.parametrize(("data", "error", "message"), [
    ([1, 2], InvalidField, r"^workload must be a JSON object, got list$"),
    ({"config": 3}, InvalidField, r"^workload.config must be an object with token_budget, max_seqs, kv_tokens; got 3$"),
    ({"config": {**CONFIG, "token_budget": "8"}}, FieldTypeError,
     r"^workload.config.token_budget must be an int, got str '8'$"),
    ({"config": {**CONFIG, "budget": 8}}, InvalidField, r"^workload.config has unknown field\(s\) \['budget'\]$"),
    ({"config": CONFIG, "requests": {}}, InvalidField, r"^workload.requests must be a list, got dict$"),
    ({"config": CONFIG, "requests": [7]}, InvalidField, r"^workload.requests\[0\] must be an object, got 7$"),
    ({"config": CONFIG, "requests": [{"rid": 0, "prompt_len": 2}]}, InvalidField,
     r"^workload.requests\[0\] lacks field\(s\) \['max_new'\]$"),
    ({"config": CONFIG, "requests": [{"rid": 0, "prompt_len": 2, "max_new": 1, "arrival_step": 1.5}]},
     FieldTypeError, r"^workload.requests\[0\].arrival_step must be an int, got float 1.5$"),
])
def test_workload_json_errors_name_the_field(data: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        load(data)


def test_workload_that_is_not_json_says_so() -> None:
    with pytest.raises(InvalidField, match=r"^workload is not valid JSON: "):
        Workload.loads("{")


def test_arrival_step_bounds() -> None:
    assert Arrival(0, 1, 1, MAX_ARRIVAL_STEP).arrival_step == MAX_ARRIVAL_STEP
    too_late = MAX_ARRIVAL_STEP + 1
    with pytest.raises(InvalidField, match=rf"^arrival_step must be <= {MAX_ARRIVAL_STEP}, got {too_late}$"):
        Arrival(0, 1, 1, too_late)
    with pytest.raises(InvalidField, match=r"^arrival_step must be >= 0, got -1$"):
        Arrival(0, 1, 1, -1)
