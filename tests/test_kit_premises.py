"""The kit never says a rule holds when no run reached what it bites on: PREEMPT-BOUND and PREEMPT-ORDER
on a grid that never preempts read `not judged (never exercised: no run preempted)`, RECOMPUTE there holds
only in part; the same target on a grid that preempts holds them, with the preemptions counted; a planted
preemption bug still reads BROKEN; the prefix design's hit and eviction rules count theirs the same way."""

from __future__ import annotations

from stallfree.conformance.kit import FAIL, NOT_JUDGED, PASS, conform
from stallfree.conformance.kit.report import render
from stallfree.prefix import small_blocks
from stallfree.prefix.contract.rules import PREFIX_BY_ID
from stallfree.spec import Workload
from stallfree.spec.paged.rules import PAGED_BY_ID
from stallfree.spec.play import Player

TARGET = "stallfree.paged:small_blocks"
EXAMPLES = 5
BUDGET = 4
ROOMY = 4096  # KV tokens: no workload of the grid comes near running out of blocks
PREEMPTS = ("PREEMPT-BOUND", "PREEMPT-ORDER")


def test_a_grid_that_never_preempts_leaves_the_preemption_rules_not_judged() -> None:
    report = conform(TARGET, profile="paged", examples=EXAMPLES, budget=BUDGET, kv_tokens=ROOMY)
    assert report.ok and report.runs > 0
    for rule in PREEMPTS:
        assert report.verdicts[rule] == NOT_JUDGED, report.verdicts
        assert report.exercised[rule] == (0, "preemptions")
        assert report.unexercised[rule] == "never exercised: no run preempted"
    assert report.verdicts["RECOMPUTE"] == PASS  # its first-prefill part is judged on every run
    assert report.partial["RECOMPUTE"].startswith("no preempted request was re-admitted")
    text = render(report)
    assert "PREEMPT-BOUND    not judged (never exercised: no run preempted)" in text
    assert "PREEMPT-BOUND    holds" not in text and "PREEMPT-ORDER    holds" not in text
    assert "RECOMPUTE        holds (" in text and "partial: no preempted request was re-admitted" in text
    assert text.endswith("2 not judged (never exercised: PREEMPT-BOUND, PREEMPT-ORDER) (17 of 17 rules checked; "
                         "1 of them in part, as their lines say)")
    rules = report.to_json()["rules"]
    assert rules["PREEMPT-BOUND"]["verdict"] == "not judged"
    assert rules["PREEMPT-BOUND"]["reason"] == "never exercised: no run preempted"
    assert rules["PREEMPT-BOUND"]["exercised"] == {"count": 0, "of": "preemptions"}


def test_the_same_target_on_a_grid_that_preempts_holds_them_with_the_count() -> None:
    report = conform(TARGET, profile="paged", examples=EXAMPLES, budget=BUDGET)
    assert report.ok
    text = render(report)
    for rule in (*PREEMPTS, "RECOMPUTE"):
        count, _ = report.exercised[rule]
        assert report.verdicts[rule] == PASS and count > 0 and rule not in report.partial, (rule, report.exercised)
    preemptions = report.exercised["PREEMPT-BOUND"][0]
    assert f"PREEMPT-BOUND    holds ({report.runs} runs; {preemptions} preemptions)" in text
    assert f"{report.exercised['RECOMPUTE'][0]} re-admissions)" in text
    assert "not judged" not in text and text.endswith("every checked rule held (17 of 17 rules checked)")


def test_a_planted_preemption_bug_still_reads_broken() -> None:
    report = conform("stallfree.faults.paged:PreemptOldest", profile="paged", examples=EXAMPLES, budget=BUDGET)
    assert report.verdicts["PREEMPT-BOUND"] == FAIL
    assert "PREEMPT-BOUND    BROKEN at step" in render(report)


def test_the_premise_bearing_rules_are_declared_where_the_rules_are() -> None:
    assert {r for r, rule in PAGED_BY_ID.items() if rule.premise} == {*PREEMPTS, "RECOMPUTE"}
    whole = {r for r, rule in PREFIX_BY_ID.items() if rule.premise and rule.premise.whole}
    part = {r for r, rule in PREFIX_BY_ID.items() if rule.premise and not rule.premise.whole}
    assert whole == {*PREEMPTS, "SHARED-READONLY", "HIT-SAME-TOKENS", "CACHED-NOT-PREFILLED"}
    assert part == {"RECOMPUTE", "CACHED-NOT-CHARGED", "EVICT-LRU"}


def played(requests: list[dict[str, object]], kv_tokens: int = 64) -> dict[str, int]:
    """The premise counts of one prefix run (budget 4, 2 slots, blocks of 2)."""
    workload = Workload.from_json({"config": {"token_budget": 4, "max_seqs": 2, "kv_tokens": kv_tokens},
                                   "requests": requests})
    player = Player(workload, small_blocks)
    player.play()
    return player.monitor.exercised


def test_the_prefix_hit_rules_count_a_hit_and_nothing_without_one() -> None:
    alone = [{"rid": 0, "prompt_len": 9, "max_new": 2}, {"rid": 1, "prompt_len": 9, "max_new": 2, "arrival_step": 6}]
    shared = [{**r, "content": [[7, 8]]} for r in alone]  # the second request's first 8 tokens are the first's
    hits = ("SHARED-READONLY", "HIT-SAME-TOKENS", "CACHED-NOT-PREFILLED", "CACHED-NOT-CHARGED")
    assert all(played(alone)[r] == 0 for r in hits), played(alone)
    assert all(played(shared)[r] == 1 for r in hits), played(shared)
    apart = [{"rid": i, "prompt_len": 6, "max_new": 2, "arrival_step": 6 * i, "content": [[i + 1, 6]]}
             for i in range(4)]  # each leaves its blocks cached; a tight pool evicts them for the next
    assert played(apart, kv_tokens=64)["EVICT-LRU"] == 0 and played(apart, kv_tokens=12)["EVICT-LRU"] > 0


def test_the_prefix_reference_holds_the_hit_rules_with_its_hits_counted() -> None:
    report = conform("stallfree.prefix.faults:small", profile="prefix", examples=EXAMPLES, budget=BUDGET)
    assert report.ok and not report.unexercised, report.unexercised
    text = render(report)
    for rule in ("SHARED-READONLY", "HIT-SAME-TOKENS", "CACHED-NOT-PREFILLED", "CACHED-NOT-CHARGED"):
        count, noun = report.exercised[rule]
        assert count > 0 and report.verdicts[rule] == PASS
        assert f"{rule:<16} holds ({report.runs} runs; {count} {noun}" in text
