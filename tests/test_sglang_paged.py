"""SGLang's retraction (its decode out of KV: `ScheduleBatch.retract_decode`, a recompute preemption),
live, behind the paged protocol: the paged monitor judges it; SGLang frees the retracted request's KV,
recomputes its prompt and emitted tokens when it is admitted again and keeps every token, but picks its
victims by its own order (fewest tokens out, then the longest prompt) and queues them behind the
waiting requests, which the paged contract's preemption rules break; a bug planted into a subclass of
SGLang's Req (a retracted request resumed without recomputing what it had emitted) is caught."""

from __future__ import annotations

import pytest
from engine_workloads import workload
from sglang_guard import require_sglang

require_sglang()

from stallfree.conformance import check_workload  # noqa: E402
from stallfree.conformance.engines.sglang_faults import CAUGHT_BY, RecomputeSkipsOutput  # noqa: E402
from stallfree.conformance.engines.sglang_paged import SglangPaged  # noqa: E402
from stallfree.conformance.kit import NOT_APPLICABLE, NOT_JUDGED, PASS, conform  # noqa: E402
from stallfree.conformance.kit.report import render  # noqa: E402
from stallfree.spec import RuleViolation, play, registry  # noqa: E402

# K 32, budget 8, 3 slots, long max_new: SGLang admits rids 2, 5 and 0 on its 0.7 estimate of their
# remaining tokens; at step 12 their decodes find 1 token free for 3 and SGLang retracts rid 2
RETRACTS = workload((8, 3, 32), (1, 11, 2), (4, 8, 2), (2, 12, 0), (1, 11, 2), (3, 7, 3), (1, 12, 1))
KEPT = ["BUDGET", "ONE-ENTRY", "SLOTS", "BLOCKS", "WATERMARK", "RECOMPUTE", "FIRST-TOKEN", "TOKENS-KEPT",
        "PROGRESS", "PARTIAL-NEXT"]


def test_sglang_retracts_frees_recomputes_and_keeps_every_token_under_the_paged_monitor() -> None:
    preempted: list[tuple[int, tuple[int, ...]]] = []
    stats = play(RETRACTS, SglangPaged, KEPT, contract=registry.contract("paged"),
                 on_step=lambda m, f: preempted.append((f.step, tuple(t.rid for t in f.preempted))))
    assert [p for p in preempted if p[1]] == [(12, (2,))]
    assert stats.finished == 6 and stats.tokens == 78


@pytest.mark.parametrize(("rule", "step", "message"), [
    ("PREEMPT-BOUND", 12, "the oldest running request, rid 2, was preempted"),  # its victim order is its own
    ("PREEMPT-ORDER", 12, "preempted [2]; the newest running requests, newest first, are [0]"),
    ("FCFS", 13, "admitted rid 1 while rid 2 waited ahead of it"),  # a victim is queued behind the waiting
])
def test_what_sglangs_retraction_breaks_replays_on_sglang(rule: str, step: int, message: str) -> None:
    with pytest.raises(RuleViolation) as broken:
        check_workload(RETRACTS, SglangPaged, rules=[rule])
    assert (broken.value.rule, broken.value.step) == (rule, step)
    assert message in broken.value.message


def test_a_retracted_request_resumed_without_recompute_is_caught() -> None:
    rule = CAUGHT_BY[RecomputeSkipsOutput]
    check_workload(RETRACTS, SglangPaged, rules=[rule])  # SGLang's own Req recomputes here
    with pytest.raises(RuleViolation) as broken:
        check_workload(RETRACTS, RecomputeSkipsOutput, rules=[rule])
    assert (broken.value.rule, broken.value.step) == (rule, 23)
    assert "before its prompt and 10 emitted tokens were back in KV" in broken.value.message


def test_the_paged_adapter_refuses_a_peak_past_the_pool_and_shows_sglangs_pool() -> None:
    s = SglangPaged(4, 2, 12)
    with pytest.raises(ValueError, match="peak of 13 blocks"):
        s.add(0, 4, 10)
    s.add(1, 4, 5)
    plan = s.schedule()
    assert list(plan) == [(1, 4)] and plan.preempted == ()
    s.complete(plan)
    assert (s.free_blocks, [r.rid for r in s.running], s.waiting) == (8, [1], [])


def test_conform_paged_on_sglang_judges_the_paged_rules_live() -> None:
    # budget 2, two slots (3 configs): the breaks are the plain adapter's, SGLang's K edge and its
    # prefill-alone batches; no workload there makes SGLang retract (docs/conformance.md)
    report = conform("stallfree.conformance.engines.sglang_paged:SglangPaged", profile="paged", budget=2,
                     max_seqs=2, examples=8)
    # no run retracts, so the kit says the preemption rules were never exercised rather than holding
    never = {rule for rule, verdict in report.verdicts.items() if verdict == NOT_JUDGED}
    assert never == {"PREEMPT-BOUND", "PREEMPT-ORDER"}, render(report)
    assert "never exercised: no run preempted" in render(report)
    assert set(report.counterexamples) == {"PROGRESS", "DECODE-FIRST", "WORK-CONSERVING"}, render(report)
    assert all(report.verdicts[r] == PASS for r in ("BLOCKS", "RECOMPUTE", "TOKENS-KEPT", "WATERMARK")), \
        render(report)
    assert report.verdicts["NEVER-FIT"] == NOT_APPLICABLE
