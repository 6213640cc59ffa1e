"""Tests written to kill mutants of spec/ that the contract's other tests let survive
(docs/mutation.md lists each one): what the monitor's messages say, the registry's statements,
plan entries that are not ints, and workload JSON errors, each naming the field and the value."""

from __future__ import annotations

import json
from enum import IntEnum

import pytest

from stallfree.faults import FAULTS
from stallfree.reference import Scheduler
from stallfree.spec import (
    RULES,
    Config,
    FieldTypeError,
    InvalidField,
    Monitor,
    Request,
    RuleViolation,
    StepFacts,
    Workload,
)
from stallfree.spec.calls import never_fit
from stallfree.spec.play import play, work_bound
from stallfree.spec.reservation import rules
from stallfree.spec.reservation.facts import observe
from stallfree.spec.reservation.monitor import refusal
from stallfree.spec.rule import Kind
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


def test_every_rule_predicate_names_its_rule_and_every_statement_is_one_line() -> None:
    # The statement is written once, in RULES; each predicate's docstring opens with its rule's ID.
    for rule in RULES:
        predicates = [p for p in (rule.plan_check, rule.done_check) if p] or [never_fit]
        for predicate in predicates:
            assert (predicate.__doc__ or "").startswith(rule.id + ","), predicate.__name__
        assert rule.statement and ":" not in rule.statement[:2] and "\n" not in rule.statement
    budget = rules.BY_ID["BUDGET"].statement
    assert budget == "the tokens of a plan sum to at most the token budget B; each decode counts 1."


def test_rule_kinds_group_the_registry_and_make_the_safety_profile() -> None:
    kinds = {k: [r.id for r in RULES if r.kind is k] for k in Kind}
    assert kinds[Kind.INPUT] == ["NEVER-FIT"]
    assert kinds[Kind.LIVENESS] == ["PROGRESS"]
    assert kinds[Kind.POLICY] == ["FCFS", "DECODE-FIRST", "PARTIAL-NEXT", "WORK-CONSERVING"]
    # KV states the reservation design's accounting: the design-free safety rules leave it out.
    assert rules.of_kind(Kind.SAFETY) == (
        "BUDGET", "ONE-ENTRY", "SLOTS", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", "CANCEL")
    assert "KV" in rules.of_kind(Kind.SAFETY, design="reservation")


# -- plan entries must be ints, and bools are not ints ----------------------------------------------


@pytest.mark.parametrize("entry", [(True, True), (True, 1), (1, True), ("1", 1), (1, 2.0)], ids=repr)
def test_PROTOCOL_plan_entry_that_is_not_two_ints_is_refused(entry: tuple[object, object]) -> None:
    # Either half alone not an int is enough (bools are not ints).
    m = monitor([[entry]], [[]])
    m.add(1, 4, 1)
    with pytest.raises(RuleViolation) as caught:
        m.step()
    assert str(caught.value) == f"PROTOCOL at step 0: plan entry 0 is {entry!r}: rid and n must be ints"


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


# -- rules judged at their exact boundary (each killed a mutant that weakened the rule) ----------------


def test_SLOTS_caught_on_the_step_that_admits_past_S() -> None:
    m = monitor([[(1, 1), (2, 1), (3, 1)]], [[1, 2, 3]], only="SLOTS")
    for rid in (1, 2, 3):
        m.add(rid, 1, 2)
    with pytest.raises(RuleViolation, match=r"^SLOTS at step 0: admitting \[1, 2, 3\] makes 3 requests "
                       r"running; max_seqs is 2$"):
        m.step()


def test_KV_caught_on_the_admission_that_overcommits_for_a_scheduler_that_shows_no_free_kv() -> None:
    m = monitor([[(1, 4), (2, 4)]], [[1, 2]], only="KV")  # Scripted shows no free_kv
    m.add(1, 4, 30)
    m.add(2, 4, 30)
    with pytest.raises(RuleViolation, match=r"^KV at step 0: admitting \[1, 2\] reserves 68 KV tokens; "
                       r"kv_tokens is 64$"):
        m.step()


def test_ONE_ENTRY_zero_token_entry_names_rid_and_n() -> None:
    m = monitor([[(1, 0)]], [[]], only="ONE-ENTRY")
    m.add(1, 4, 1)
    with pytest.raises(RuleViolation, match=r"^ONE-ENTRY at step 0: rid 1 is given n=0; every entry needs n >= 1$"):
        m.step()


def test_PREFILL_ONCE_chunk_past_the_prompt_says_how_many_positions_remain() -> None:
    m = monitor([[(1, 3)], [(1, 3)]], [[], [1]], only="PREFILL-ONCE")
    m.add(1, 5, 1)
    m.step()
    with pytest.raises(RuleViolation, match=r"^PREFILL-ONCE at step 1: rid 1 gets a chunk of 3 at position 3, "
                       r"past the end of its 5-token prompt \(only 2 positions remain\)$"):
        m.step()


def test_FCFS_names_the_request_that_was_skipped() -> None:
    m = monitor([[(3, 1)]], [[3]], only="FCFS")
    for rid in (1, 2, 3):
        m.add(rid, 1, 1)
    with pytest.raises(RuleViolation, match=r"^FCFS at step 0: admitted rid 3 while rid 1 waited ahead of it$"):
        m.step()


def test_KV_return_names_the_requests_finished_this_step() -> None:
    class ShowsFreeKV(Scripted):
        free_kv = 60  # wrong: request 1 finished and its 6 came back, so all 64 are free

    m = Monitor(ShowsFreeKV([[(1, 5)]], [[1]]), Config(**CONFIG), ["KV"])
    m.add(1, 5, 1)
    with pytest.raises(RuleViolation, match=r"^KV at step 0: the scheduler shows free_kv=60 after the step; the "
                       r"reservations of running requests leave 64 free \(finished this step: \[1\]\)$"):
        m.step()


def ready_beyond_budget(plan: list[tuple[object, object]]) -> Monitor:
    """Three requests made ready in one step of a budget of 2 (BUDGET broken, and not checked), then
    `plan`: DECODE-FIRST must judge a step with more ready requests than the budget."""
    m = Monitor(Scripted([[(1, 1), (2, 1), (3, 1)], plan], [[1, 2, 3], []]),
                Config(token_budget=2, max_seqs=4, kv_tokens=64), ["DECODE-FIRST"])
    for rid in (1, 2, 3):
        m.add(rid, 1, 3)
    m.step()
    return m


def test_DECODE_FIRST_beyond_the_budget_takes_the_oldest_and_no_prefill() -> None:
    ready_beyond_budget([(1, 1), (2, 1)]).plan()  # the oldest two: holds
    with pytest.raises(RuleViolation, match=r"^DECODE-FIRST at step 1: the oldest ready request\(s\) \[1\] got no "
                       r"token while younger ones did$"):
        ready_beyond_budget([(2, 1), (3, 1)]).plan()
    m = ready_beyond_budget([(1, 1), (2, 1), (4, 1)])
    m.add(4, 1, 1)
    with pytest.raises(RuleViolation, match=r"^DECODE-FIRST at step 1: prefill ran while 1 ready request\(s\) "
                       r"got no token$"):
        m.plan()


def test_DECODE_FIRST_with_exactly_B_ready_names_the_one_left_out() -> None:
    m = Monitor(Scripted([[(1, 1), (2, 1)], [(2, 1)]], [[1, 2], [2]]),
                Config(token_budget=2, max_seqs=4, kv_tokens=64), ["DECODE-FIRST"])
    m.add(1, 1, 3)
    m.add(2, 1, 3)
    m.step()
    with pytest.raises(RuleViolation, match=r"^DECODE-FIRST at step 1: ready request\(s\) \[1\] got no token; "
                       r"the budget of 2 covers all 2$"):
        m.step()


def two_partials(plan: list[tuple[object, object]], budget: int = 4) -> Monitor:
    """Requests 1 and 2 both left partial by step 0 (possible for a wrong scheduler only), then `plan`."""
    m = Monitor(Scripted([[(1, 1), (2, 1)], plan], [[], []]),
                Config(token_budget=budget, max_seqs=4, kv_tokens=64), ["PARTIAL-NEXT"])
    m.add(1, 3, 1)
    m.add(2, 5, 1)
    m.step()
    return m


def test_PARTIAL_NEXT_owes_each_partial_min_remaining_left_in_admission_order() -> None:
    two_partials([(1, 2), (2, 2)]).plan()  # 1 owed its remaining 2, then 2 owed the 2 left
    two_partials([(2, 2), (1, 2)]).plan()  # the same entries in another order: still owed and given
    with pytest.raises(RuleViolation, match=r"^PARTIAL-NEXT at step 1: partial rid 2 \(4 prompt tokens left\) "
                       r"got 1 with 2 budget left; it is owed min\(remaining, left\) = 2$"):
        two_partials([(1, 2), (2, 1)]).plan()
    with pytest.raises(RuleViolation, match=r"partial rid 1 \(2 prompt tokens left\) got 0 with 4 budget left"):
        two_partials([(2, 2)]).plan()


def test_PARTIAL_NEXT_owes_nothing_once_decodes_took_the_budget() -> None:
    m = Monitor(Scripted([[(1, 1), (2, 1), (3, 1)], [(1, 1), (2, 1)]], [[1, 2], [1, 2]]),
                Config(token_budget=2, max_seqs=4, kv_tokens=64), ["PARTIAL-NEXT"])
    m.add(1, 1, 3)
    m.add(2, 1, 3)
    m.add(3, 5, 1)
    m.step()  # 3 tokens in a budget of 2 (BUDGET is not checked): 1 and 2 ready, 3 partial
    m.plan()  # the two decodes take the whole budget: partial 3 is owed 0


def test_WORK_CONSERVING_one_unused_token_while_the_head_fits_exactly() -> None:
    m = Monitor(Scripted([[(1, 3)]], [[1]]), Config(token_budget=4, max_seqs=2, kv_tokens=8), ["WORK-CONSERVING"])
    m.add(1, 3, 1)
    m.add(2, 1, 3)  # reservation 4 == the free KV left after request 1 (8 - 4)
    with pytest.raises(RuleViolation, match=r"^WORK-CONSERVING at step 0: 1 budget token\(s\) unused while "
                       r"waiting rid 2 fits: 1 slot\(s\) free, reservation 4 <= free KV 4$"):
        m.step()


def test_WORK_CONSERVING_cut_chunk_names_the_remaining_prompt() -> None:
    m = Monitor(Scripted([[(1, 2)], [(1, 1)]], [[], []]), Config(4, 2, 64), ["WORK-CONSERVING"])
    m.add(1, 9, 1)
    with pytest.raises(RuleViolation, match=r"^WORK-CONSERVING at step 0: 2 budget token\(s\) unused while "
                       r"rid 1 got only 2 of its 9 remaining prompt tokens$"):
        m.step()


class Refuses(Scripted):
    def __init__(self, error: BaseException) -> None:
        super().__init__([], [])
        self.error = error

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        raise self.error


@pytest.mark.parametrize(("error", "message"), [
    (ValueError(""), r"add\(\) refused with an empty ValueError: the error must say what was wrong"),
    (InvalidField("no"), r"add\(\) refused a valid request: InvalidField: no"),
])
def test_NEVER_FIT_judges_how_add_refused(error: BaseException, message: str) -> None:
    m = Monitor(Refuses(error), Config(**CONFIG))
    bad = (1, 2, 1) if str(error) else (1, 100, 1)  # the empty refusal is of a never-fit request
    with pytest.raises(RuleViolation, match=rf"^NEVER-FIT at step 0: add\({bad[0]}, {bad[1]}, {bad[2]}\): {message}$"):
        m.add(*bad)


def test_NEVER_FIT_a_refusal_that_is_not_a_ValueError_is_named() -> None:
    class Odd(Exception):
        pass

    m = Monitor(Refuses(Odd("nope")), Config(**CONFIG))
    with pytest.raises(RuleViolation, match=r"add\(\) refused with Odd, not ValueError or TypeError: nope$"):
        m.add(1, 100, 1)


def test_PROTOCOL_violation_carries_its_rule_and_step() -> None:
    m = monitor([[(9, 1)]], [[]])
    with pytest.raises(RuleViolation) as found:
        m.step()
    assert (found.value.rule, found.value.step) == ("PROTOCOL", 0)


# -- workloads: the JSON round trip and the PROGRESS bound --------------------------------------------


def test_workload_json_round_trip() -> None:
    workload = Workload(Config(4, 2, 64), (Arrival(3, 5, 2, 1), Arrival(4, 1, 1, 0)))
    assert Workload.loads(workload.dumps()) == workload
    assert json.loads(workload.dumps()) == {
        "config": {"token_budget": 4, "max_seqs": 2, "kv_tokens": 64},
        "requests": [{"rid": 3, "prompt_len": 5, "max_new": 2, "arrival_step": 1},
                     {"rid": 4, "prompt_len": 1, "max_new": 1, "arrival_step": 0}],
    }


def test_work_bound_is_last_arrival_plus_all_work_plus_one() -> None:
    assert work_bound(Workload(Config(4, 2, 64))) == 1
    assert work_bound(Workload(Config(4, 2, 64), (Arrival(0, 3, 2, 5), Arrival(1, 4, 1, 2)))) == 5 + (5 + 5) + 1
    # fields that are not ints (refused by add()) carry no work
    assert work_bound(Workload(Config(4, 2, 64), (Arrival(0, "x", 2, 0), Arrival(1, 0, -3, 0)))) == 1


def test_shadow_lists_ready_and_partial_requests_in_admission_order() -> None:
    m = monitor([[(1, 2), (2, 1), (3, 2)]], [[1]], only="TOKENS")
    for rid, prompt_len in ((1, 2), (2, 3), (3, 4)):
        m.add(rid, prompt_len, 2)
    m.step()  # 1 completes its prompt; 2 and 3 stay partial (a wrong scheduler's state; rules not checked)
    assert [t.rid for t in m.shadow.ready()] == [1]
    assert [t.rid for t in m.shadow.partial()] == [2, 3]


def test_DECODE_FIRST_lists_at_most_five_requests_left_out() -> None:
    m = Monitor(Scripted([[(r, 1) for r in range(1, 7)], []], [list(range(1, 7)), []]),
                Config(token_budget=8, max_seqs=8, kv_tokens=64), ["DECODE-FIRST"])
    for rid in range(1, 7):
        m.add(rid, 1, 3)
    m.step()  # six ready
    with pytest.raises(RuleViolation, match=r"ready request\(s\) \[1, 2, 3, 4, 5\] got no token; the budget of 8 "
                       r"covers all 6$"):
        m.plan()
    m = Monitor(Scripted([[(r, 1) for r in range(1, 8)], [(7, 1)]], [list(range(1, 8)), []]),
                Config(token_budget=6, max_seqs=8, kv_tokens=64), ["DECODE-FIRST"])
    for rid in range(1, 8):
        m.add(rid, 1, 3)
    m.step()  # seven ready in a budget of 6 (BUDGET not checked)
    with pytest.raises(RuleViolation, match=r"the oldest ready request\(s\) \[1, 2, 3, 4, 5\] got no token"):
        m.plan()


def test_PARTIAL_NEXT_second_partial_is_owed_what_the_first_left() -> None:
    two_partials([(1, 2), (2, 3)], budget=5).plan()  # 1 takes its 2, leaving 3 for request 2


def test_WORK_CONSERVING_cut_chunk_counts_from_where_the_prompt_stands() -> None:
    m = Monitor(Scripted([[(1, 4)], [(1, 2)]], [[], []]), Config(4, 2, 64), ["WORK-CONSERVING"])
    m.add(1, 9, 1)
    m.step()
    with pytest.raises(RuleViolation, match=r"^WORK-CONSERVING at step 1: 2 budget token\(s\) unused while "
                       r"rid 1 got only 2 of its 5 remaining prompt tokens$"):
        m.step()


# -- play(): arrivals on time, the rules asked for, the counts, the PROGRESS bound ----------------------


class Mute:
    """Prefills each request whole, then decodes it every step without ever reporting a token:
    plans are never empty, yet nothing finishes (a stall only the work bound catches)."""

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        self.rids: list[tuple[int, int]] = []
        self.started: set[int] = set()

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        self.rids.append((rid, prompt_len))

    def schedule(self) -> list[tuple[int, int]]:
        plan = [(rid, 1 if rid in self.started else prompt_len) for rid, prompt_len in self.rids]
        self.started.update(rid for rid, _ in self.rids)
        return plan

    def complete(self, plan: object) -> list[int]:
        return []


STALL = Workload(Config(8, 2, 64), (Arrival(0, 3, 2, 0),))


def test_play_raises_PROGRESS_at_the_work_bound_when_PROGRESS_is_checked() -> None:
    with pytest.raises(RuleViolation, match=r"^PROGRESS at step 6: 1 request\(s\) still pending after 6 steps; "
                       r"all work fits in 6$"):
        play(STALL, Mute, ["PROGRESS"])


def test_play_stops_at_the_work_bound_when_PROGRESS_is_not_checked() -> None:
    stats = play(STALL, Mute, ["BUDGET"])
    assert stats.stopped_at_bound == work_bound(STALL) and stats.steps == work_bound(STALL)


def test_play_checks_only_the_rules_asked_for() -> None:
    skip = Workload(Config(4, 4, 19), (Arrival(0, 1, 1, 0), Arrival(1, 8, 10, 0), Arrival(2, 1, 1, 0)))
    with pytest.raises(RuleViolation, match=r"^FCFS"):
        play(skip, FAULTS["FCFS"])
    play(skip, FAULTS["FCFS"], ["BUDGET", "TOKENS"])  # FCFS broken, not checked: no violation


def test_play_adds_each_request_just_before_its_arrival_step_and_counts_refusals() -> None:
    seen: list[tuple[int, int, bool]] = []
    planned_first: dict[int, int] = {}

    def on_add(a: Arrival, accepted: bool) -> None:
        seen.append((a.rid, a.arrival_step, accepted))

    def on_step(m: Monitor, facts: StepFacts) -> None:
        for rid, _ in facts.plan:
            planned_first.setdefault(rid, facts.step)

    workload = Workload(Config(8, 2, 64), (Arrival(0, 2, 1, 3), Arrival(1, 100, 1, 3), Arrival(2, 2, 1, 5)))
    stats = play(workload, Scheduler, on_step=on_step, on_add=on_add)
    assert seen == [(0, 3, True), (1, 3, False), (2, 5, True)]
    assert planned_first == {0: 3, 2: 5}
    assert (stats.accepted, stats.refused, stats.finished) == (2, 1, 2)
    # steps 0..5, two of them busy with a 2-token prompt that also finishes its request
    assert (stats.steps, stats.busy_steps, stats.tokens) == (6, 2, 4)
    assert stats.checks == 6 * 15 + 3  # 15 predicates a step, and each add() judged


def test_play_of_an_empty_workload_runs_no_step() -> None:
    stats = play(Workload(Config(8, 2, 64)), Scheduler)
    assert (stats.steps, stats.accepted, stats.refused) == (0, 0, 0)


def test_shadow_follows_an_out_of_order_admission_when_FCFS_is_not_checked() -> None:
    skip = Workload(Config(4, 4, 19), (Arrival(0, 1, 1, 0), Arrival(1, 8, 10, 0), Arrival(2, 1, 1, 0)))
    positions: list[tuple[list[int], list[int]]] = []

    def on_step(m: Monitor, facts: StepFacts) -> None:
        positions.append(([t.rid for t in m.shadow.waiting], list(m.shadow.running)))

    play(skip, FAULTS["FCFS"], ["BUDGET"], on_step=on_step)
    # step 0 admits 0 (finishing it) and then 2, which skipped ahead of 1: 1 still waits, at the head
    assert positions[0] == ([1], [])


def test_PROTOCOL_complete_must_return_an_iterable() -> None:
    m = monitor([[(1, 2)]], [5])  # type: ignore[list-item]
    m.add(1, 2, 1)
    with pytest.raises(RuleViolation) as found:
        m.step()
    assert (found.value.rule, found.value.step) == ("PROTOCOL", 0)
    assert found.value.message == "complete() returned int 5, not an iterable of rids"


def test_monitor_complete_without_a_plan_says_so() -> None:
    with pytest.raises(RuntimeError, match=r"^Monitor.complete\(\) called without a pending plan$"):
        monitor([], []).complete()


def test_shadow_records_admission_and_finish_steps() -> None:
    admitted_at: list[int | None] = []
    finished: dict[int, int] = {}

    def on_step(m: Monitor, facts: StepFacts) -> None:
        if 1 in m.shadow.running:
            admitted_at.append(m.shadow.running[1].admitted_at)
        finished.update({rid: e.step for rid, e in m.shadow.ended.items()})

    play(Workload(Config(8, 2, 64), (Arrival(1, 2, 2, 1),)), Scheduler, on_step=on_step)
    assert admitted_at == [1] and finished == {1: 2}  # admitted on step 1, last token on step 2


@pytest.mark.parametrize("bad", ["1", True, 1.0])
def test_PROTOCOL_emitted_rids_must_be_ints(bad: object) -> None:
    m = monitor([[(1, 2)]], [[bad]])  # type: ignore[list-item]
    m.add(1, 2, 1)
    with pytest.raises(RuleViolation) as found:
        m.step()
    assert (found.value.rule, found.value.step) == ("PROTOCOL", 0)
    assert found.value.message == f"complete() returned {bad!r} among the emitted rids: rids are ints"


def test_emitted_rid_of_an_int_subclass_and_a_free_kv_that_is_not_an_int() -> None:
    class ShowsOddFreeKV(Scripted):
        free_kv = "all of it"  # not an int: the monitor does not read it as free KV

    m = Monitor(ShowsOddFreeKV([[(1, 2)]], [[Rid.ONE]]), Config(**CONFIG))
    m.add(1, 2, 1)
    facts = m.step()
    assert facts.emitted_set == {1} and facts.reported_free_kv is None


@pytest.mark.parametrize(("plan", "message"), [
    (5, "schedule() returned int 5, not a sequence"),
    (["junk"], "plan entry 0 is 'junk', which does not unpack as (rid, n)"),
    ([(1, True)], "plan entry 0 is (1, True): rid and n must be ints"),
])
def test_PROTOCOL_plan_must_be_int_pairs(plan: object, message: str) -> None:
    m = monitor([plan], [[]])  # type: ignore[list-item]
    m.add(1, 2, 1)
    with pytest.raises(RuleViolation) as found:
        m.plan()
    assert (found.value.rule, found.value.step, found.value.message) == ("PROTOCOL", 0, message)


def test_monitor_plan_twice_says_so() -> None:
    m = monitor([[(1, 2)], [(1, 2)]], [[1], [1]])
    m.add(1, 2, 1)
    m.plan()
    with pytest.raises(RuntimeError, match=r"^Monitor.plan\(\) called twice without complete\(\)$"):
        m.plan()


def test_facts_of_a_step_start_empty() -> None:
    facts = StepFacts(3)
    assert (facts.step, facts.num_tokens, facts.emitted, facts.emitted_set, facts.reported_free_kv) == (
        3, 0, [], set(), None)


# -- found by the spec mutation run of this session -------------------------------------------------


def test_ONE_ENTRY_duplicate_names_the_rid_listed_twice() -> None:
    m = monitor([[(1, 2), (1, 2)]], [[]])
    m.add(1, 4, 2)
    with pytest.raises(RuleViolation, match=r"^ONE-ENTRY at step 0: rid 1 appears more than once in the plan$"):
        m.plan()


def test_a_rid_is_taken_while_waiting_or_running_and_free_once_its_request_ended() -> None:
    # The monitor must refuse a second add() of a rid while its request waits or runs (NEVER-FIT:
    # rid taken), and so must a scheduler. Once the request ended its rid is free: the reference
    # accepts it again (it keeps no record of ended requests), and a scheduler refusing it is not
    # judged wrong either.
    m = Monitor(Scheduler(**CONFIG), Config(**CONFIG))
    assert m.add(1, 2, 1) and m.add(2, 20, 2)
    assert m.shadow.is_taken(1) and m.shadow.is_taken(2) and not m.shadow.is_taken(3)
    assert m.add(1, 2, 1) is False  # waiting
    m.step()  # rid 1: whole prompt, its only token: finished; rid 2 admitted, partial
    # deliberate: the phases the next adds need (a monitor that kept rid 1 running, or never admitted
    # rid 2, fails here)
    assert 1 in m.shadow.ended and 1 not in m.shadow.tracks and 2 in m.shadow.running
    assert m.add(2, 2, 1) is False  # running
    assert not m.shadow.is_taken(1) and m.shadow.is_taken(2)
    assert refusal(m.shadow, 2, 2, 1) == "rid 2 is already taken by an earlier request"
    assert refusal(m.shadow, 1, 2, 1) is None and refusal(m.shadow, 3, 2, 1) is None
    assert m.add(1, 2, 1) is True  # ended: free again
    # deliberate: the monitor follows the reused rid as a new request (a shadow that kept it as ended fails)
    assert 1 in m.shadow.tracks and 1 not in m.shadow.ended


def test_NEVER_FIT_a_scheduler_may_refuse_an_ended_rid_but_not_a_fresh_one() -> None:
    assert never_fit(None, ValueError("rid 1 is taken"), may_refuse=True) is None
    assert never_fit(None, ValueError("rid 1 is taken")) is not None
    assert never_fit(None, RuntimeError("rid 1 is taken"), may_refuse=True) is not None
    assert never_fit(None, ValueError(""), may_refuse=True) is not None


def test_entries_after_a_duplicate_are_still_read() -> None:
    # BUDGET is judged before ONE-ENTRY, over every entry of the plan, the ones after a duplicate too.
    m = monitor([[(1, 2), (1, 2), (2, 30)]], [[]])
    m.add(1, 4, 2)
    m.add(2, 30, 2)
    with pytest.raises(RuleViolation, match=r"^BUDGET at step 0: the plan carries 34 tokens; the budget is 8$"):
        m.plan()
    m = monitor([[(1, 2), (1, 2), (2, 0)]], [[]], only="ONE-ENTRY")
    m.add(1, 4, 2)
    m.add(2, 4, 2)
    facts = observe(m.shadow, [(1, 2), (1, 2), (2, 0)])
    assert facts.first_bad_n == (2, 0) and facts.duplicates == [1] and facts.num_tokens == 4
    assert [c.track.rid for c in facts.admitted] == [1, 2]


class RefusesLarge(Scripted):
    """Scripted, but add() rightly refuses what can never fit (the config's KV is 64)."""

    def add(self, rid: int, prompt_len: int, max_new: int) -> None:
        if prompt_len + max_new > CONFIG["kv_tokens"]:
            raise ValueError(f"rid {rid} can never fit")


def test_a_refused_rid_planned_is_a_NEVER_FIT_violation_at_its_step() -> None:
    m = Monitor(RefusesLarge([[], [(9, 1)]], [[], []]), Config(**CONFIG))
    assert m.add(9, 100, 1) is False  # rightly refused: no violation
    m.step()  # nothing to run: an empty plan is right
    with pytest.raises(RuleViolation) as caught:
        m.plan()
    assert (caught.value.rule, caught.value.step) == ("NEVER-FIT", 1)
    assert str(caught.value) == "NEVER-FIT at step 1: rid 9 was refused by add() yet is planned"


def test_NEVER_FIT_names_why_the_request_had_to_be_refused() -> None:
    m = monitor([], [])  # Scripted: add() accepts anything
    with pytest.raises(RuleViolation) as caught:
        m.add(1, 100, 1)
    assert str(caught.value) == (
        "NEVER-FIT at step 0: add(1, 100, 1): add() accepted a request it must refuse: prompt_len + "
        "max_new = 100 + 1 = 101 exceeds kv_tokens=64 (rid 1 could never be admitted)"
    )


def test_an_accepted_request_the_monitor_cannot_follow_is_a_PROTOCOL_violation() -> None:
    # NEVER-FIT unchecked: the scheduler may accept what it should refuse, but a rid that is not an
    # int cannot be followed at all.
    m = monitor([[]], [[]], only="FCFS")
    m.step()
    with pytest.raises(RuleViolation) as caught:
        m.add("a", 4, 2)
    assert (caught.value.rule, caught.value.step) == ("PROTOCOL", 1)
    assert str(caught.value) == ("PROTOCOL at step 1: add('a', 4, 2) was accepted but the request cannot be "
                                 "followed: rid must be an int, got str 'a'")


class ShowsFreeKV(Scripted):
    """Scripted, and shows a fixed (wrong) free KV after every step."""

    free_kv = 0


def test_TOKENS_is_judged_before_KVs_return_check() -> None:
    # rid 1 emits twice in one step (TOKENS) and the scheduler shows a wrong free_kv (KV): the token
    # rule is the cause, so it is the one reported. FIRST-TOKEN holds (its prompt completed).
    config = Config(**CONFIG)
    m = Monitor(ShowsFreeKV([[(1, 4)]], [[1, 1]]), config)
    assert m.config is config and m.shadow.config is config
    m.add(1, 4, 3)
    with pytest.raises(RuleViolation, match=r"^TOKENS at step 0: rid 1 emitted more than one token in one step$"):
        m.step()


@pytest.mark.parametrize(("fields", "message"), [
    ((-1, 1, 1), "rid must be >= 0, got -1"),
    ((1, 0, 1), "prompt_len must be >= 1, got 0"),
    ((1, 1, 0), "max_new must be >= 1, got 0"),
    ((1, 1, 2**63), "max_new must be <= 2**63-1, got 9223372036854775808"),
    (("1", 1, 1), "rid must be an int, got str '1'"),
])
def test_a_bad_request_field_is_named_exactly(fields: tuple[object, object, object], message: str) -> None:
    with pytest.raises((InvalidField, FieldTypeError)) as caught:
        Request(*fields)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_select_takes_one_ID_or_several_and_names_unknown_ones() -> None:
    assert rules.select("FCFS") == (rules.BY_ID["FCFS"],)
    assert rules.select(["KV", "BUDGET"]) == (rules.BY_ID["BUDGET"], rules.BY_ID["KV"])  # registry order
    with pytest.raises(ValueError) as caught:
        rules.select(["KV", "NOPE"])
    assert str(caught.value) == f"unknown rule ID(s) ['NOPE']; the rules are {', '.join(rules.RULE_IDS)}"
    assert "BUDGET, ONE-ENTRY, SLOTS" in str(caught.value)


@pytest.mark.parametrize(("fields", "message"), [
    ((0, 1, 1), "token_budget must be >= 1, got 0"),
    ((1, 0, 1), "max_seqs must be >= 1, got 0"),
    ((1, 1, 0), "kv_tokens must be >= 1, got 0"),
    ((1, 1, 2**63), "kv_tokens must be <= 2**63-1, got 9223372036854775808"),
])
def test_a_bad_config_field_is_named_exactly(fields: tuple[int, int, int], message: str) -> None:
    with pytest.raises(InvalidField) as caught:
        Config(*fields)
    assert str(caught.value) == message


def test_MAX_INT_itself_is_a_valid_field() -> None:
    assert Config(1, 1, 2**63 - 1).kv_tokens == 2**63 - 1
    assert Request(2**63 - 1, 1, 1).rid == 2**63 - 1
