"""SGLang's scheduling policy (its PrefillAdder over its radix cache and CPU KV pool), live, behind the
plain protocol: the kit judges every rule on it; the rules SGLang's design breaks are broken with
1-minimal counterexamples that replay on SGLang in-process, and a bug planted into a subclass of
SGLang's PrefillAdder is caught where SGLang itself holds."""

from __future__ import annotations

import pytest
from engine_workloads import plans_only, workload
from sglang_guard import require_sglang

require_sglang()

from stallfree.conformance import check_workload  # noqa: E402
from stallfree.conformance.engines.sglang_adapter import SglangDefaultRatio, SglangScheduler  # noqa: E402
from stallfree.conformance.engines.sglang_faults import CAUGHT_BY, ChunkOneOver, FinishedKvPinned  # noqa: E402
from stallfree.conformance.kit import FAIL, NOT_APPLICABLE, NOT_JUDGED, PASS, conform  # noqa: E402
from stallfree.conformance.kit.report import render  # noqa: E402
from stallfree.spec import RULE_IDS, RuleViolation, Workload, play  # noqa: E402

ADAPTER = "stallfree.conformance.engines.sglang_adapter"


def test_sglang_runs_a_prefill_batch_alone_and_the_decode_waits() -> None:
    # rid 0 decodes; a 20-token prompt arrives at step 2, budget 8: SGLang's prefill batches run alone,
    # in chunks of B, so rid 0 gets no token for three steps, then both decode together.
    w = workload((8, 4, 64), (4, 6, 0), (20, 3, 2))
    steps: list[list[tuple[int, int]]] = []
    stats = play(w, SglangScheduler, ["BUDGET", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS"],  # KV: below
                 on_step=lambda m, f: steps.append(f.plan))
    assert stats.finished == 2
    assert steps[:6] == [[(0, 4)], [(0, 1)], [(1, 8)], [(1, 8)], [(1, 4)], [(0, 1), (1, 1)]]
    with pytest.raises(RuleViolation) as broken:
        check_workload(w, SglangScheduler, rules=["DECODE-FIRST"])
    assert broken.value.rule == "DECODE-FIRST" and broken.value.step == 2


@pytest.mark.parametrize(("rule", "step", "w"), [
    # the decode batch is the whole running batch: max_prefill_tokens binds prefill batches only
    ("BUDGET", 2, workload((1, 2, 7), (1, 2, 0), (1, 2, 0))),
    # SGLang's own account (free_kv) holds back a running request's remaining max_new, and the request
    # holds its KV but for its last token (sampled, never fed back): one token less than the contract's
    ("KV", 0, workload((1, 1, 5), (1, 2, 0))),
    # the adder admits only when prompt + max_new is strictly below the free KV
    ("PROGRESS", 0, workload((1, 1, 2), (1, 1, 0))),
    # a prefill batch runs alone: the running decode waits
    ("DECODE-FIRST", 1, workload((1, 2, 6), (1, 2, 0), (1, 1, 0))),
])
def test_what_sglangs_design_breaks_replays_on_sglang(rule: str, step: int, w: Workload) -> None:
    # The 1-minimal counterexamples `stallfree conform` printed on the default grid, seed 0.
    with pytest.raises(RuleViolation) as broken:
        check_workload(w, SglangScheduler, rules=[rule])
    assert (broken.value.rule, broken.value.step) == (rule, step)


def test_sglangs_admission_itself_reserves_past_k_judged_on_its_plans_alone() -> None:
    # With its account hidden, KV judges the admissions: SGLang admits rid 3 (7 + 1) with 13 tokens free
    # and 3 still to decode (10 > 8); the contract's account is 3 x 3 + 8 = 17 > K 16.
    w = workload((1, 4, 16), (1, 2, 0), (1, 2, 0), (1, 2, 0), (7, 1, 0))
    with pytest.raises(RuleViolation) as broken:
        check_workload(w, plans_only(SglangScheduler), rules=["KV"])
    assert (broken.value.rule, broken.value.step) == ("KV", 3)


def test_at_sglangs_default_ratio_the_adder_admits_on_an_estimate() -> None:
    # rid 0 (1 + 5) runs; rid 1 (1 + 2) is admitted at step 1 on rid 0's remaining 4 tokens x 0.7: 9 > K 8
    # by the contract's account. At ratio 1.0 SGLang charges all 4 and waits. (At 0.7 SGLang's account is
    # no whole number of tokens: SglangDefaultRatio shows no free_kv, and KV judges its plans.)
    w = workload((1, 2, 8), (1, 5, 0), (1, 2, 0))
    assert SglangDefaultRatio(1, 2, 8).free_kv is None
    with pytest.raises(RuleViolation) as broken:
        check_workload(w, SglangDefaultRatio, rules=["KV"])
    assert (broken.value.rule, broken.value.step) == ("KV", 1)
    check_workload(w, plans_only(SglangScheduler), rules=["KV"])


def test_free_kv_is_sglangs_own_account_after_every_step() -> None:
    # K 6: rid 0 (1 + 2) is prefilled at step 0; SGLang's allocator has 5 tokens free and its adder holds
    # back rid 0's 1 remaining token: 4 (the contract's 6 - 3 = 3). rid 1 (1 + 1) finishes at step 1,
    # its token back in the radix cache, evictable; rid 0 finishes at step 2: all 6 free again.
    s = SglangScheduler(token_budget=1, max_seqs=2, kv_tokens=6)
    s.add(0, 1, 2)
    s.add(1, 1, 1)
    shown = [s.free_kv]
    for _ in range(3):
        plan = s.schedule()
        assert s.free_kv is None  # shown between steps only
        s.complete(plan)
        shown.append(s.free_kv)
    assert shown == [6, 4, 4, 6]
    assert s.allocator.available_size() + s.tree.evictable_size() == 6


# every request ends on its prefill, each prompt within the budget: SGLang's account is the contract's
FINISH_ON_PREFILL = workload((4, 1, 8), (3, 1, 0), (2, 1, 0), (4, 1, 1))


def test_a_kv_leak_planted_in_sglangs_radix_cache_is_caught_on_the_step_it_happens() -> None:
    check_workload(FINISH_ON_PREFILL, SglangScheduler, rules=["KV"])  # SGLang's own cache holds KV here
    with pytest.raises(RuleViolation) as broken:
        check_workload(FINISH_ON_PREFILL, FinishedKvPinned, rules=[CAUGHT_BY[FinishedKvPinned]])
    assert (broken.value.rule, broken.value.step) == ("KV", 0)  # rid 0 ends at step 0; two more steps follow
    assert "free_kv=5" in broken.value.message and "leave 8 free" in broken.value.message
    check_workload(FINISH_ON_PREFILL, plans_only(FinishedKvPinned), rules=["KV"])  # unseen without free_kv


def test_conform_on_sglang_judges_every_rule_at_one_slot() -> None:
    # One slot: a decode batch is one token, so BUDGET holds; PROGRESS and WORK-CONSERVING break at the
    # edge where prompt + max_new is the whole of K (the adder's strict comparison); KV breaks on SGLang's
    # own account, one token less per running request than the contract's.
    report = conform(f"{ADAPTER}:SglangScheduler", budget=4, max_seqs=1, examples=4)
    assert NOT_JUDGED not in report.verdicts.values(), render(report)
    assert set(report.counterexamples) == {"PROGRESS", "WORK-CONSERVING", "KV"}, render(report)
    assert all(c.minimal for c in report.counterexamples.values())
    assert "free_kv=" in report.counterexamples["KV"].message
    assert report.verdicts["NEVER-FIT"] == NOT_APPLICABLE
    assert {r for r, v in report.verdicts.items() if v == PASS} == {
        r for r in RULE_IDS if r not in {"PROGRESS", "WORK-CONSERVING", "KV", "NEVER-FIT", "CANCEL"}}


def test_a_bug_planted_in_sglangs_prefill_adder_is_caught_where_sglang_holds() -> None:
    report = conform("stallfree.conformance.engines.sglang_faults:ChunkOneOver", budget=4, max_seqs=1, examples=4)
    rule = CAUGHT_BY[ChunkOneOver]
    assert report.verdicts[rule] == FAIL, render(report)
    c = report.counterexamples[rule]
    assert c.minimal and "budget" in c.message
    with pytest.raises(RuleViolation) as broken:  # the printed test's call, on the faulty adder
        check_workload(c.workload, ChunkOneOver, rules=[rule])
    assert broken.value.rule == rule
    check_workload(c.workload, SglangScheduler, rules=[rule])  # SGLang's own adder holds it there
