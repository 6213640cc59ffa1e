"""SGLang's scheduling policy (its PrefillAdder over its radix cache and CPU KV pool), live, behind the
plain protocol: the kit judges every rule on it; the rules SGLang's design breaks are broken with
1-minimal counterexamples that replay on SGLang in-process, and a bug planted into a subclass of
SGLang's PrefillAdder is caught where SGLang itself holds."""

from __future__ import annotations

import pytest
from engine_workloads import workload
from sglang_guard import require_sglang

require_sglang()

from stallfree.conformance import check_workload  # noqa: E402
from stallfree.conformance.engines.sglang_adapter import SglangDefaultRatio, SglangScheduler  # noqa: E402
from stallfree.conformance.engines.sglang_faults import CAUGHT_BY, ChunkOneOver  # noqa: E402
from stallfree.conformance.kit import FAIL, NOT_APPLICABLE, NOT_JUDGED, PASS, conform  # noqa: E402
from stallfree.conformance.kit.report import render  # noqa: E402
from stallfree.spec import RULE_IDS, RuleViolation, Workload, play  # noqa: E402

ADAPTER = "stallfree.conformance.engines.sglang_adapter"


def test_sglang_runs_a_prefill_batch_alone_and_the_decode_waits() -> None:
    # rid 0 decodes; a 20-token prompt arrives at step 2, budget 8: SGLang's prefill batches run alone,
    # in chunks of B, so rid 0 gets no token for three steps, then both decode together.
    w = workload((8, 4, 64), (4, 6, 0), (20, 3, 2))
    steps: list[list[tuple[int, int]]] = []
    stats = play(w, SglangScheduler, ["BUDGET", "PREFILL-ONCE", "FIRST-TOKEN", "TOKENS", "KV"],
                 on_step=lambda m, f: steps.append(f.plan))
    assert stats.finished == 2
    assert steps[:6] == [[(0, 4)], [(0, 1)], [(1, 8)], [(1, 8)], [(1, 4)], [(0, 1), (1, 1)]]
    with pytest.raises(RuleViolation) as broken:
        check_workload(w, SglangScheduler, rules=["DECODE-FIRST"])
    assert broken.value.rule == "DECODE-FIRST" and broken.value.step == 2


@pytest.mark.parametrize(("rule", "step", "w"), [
    # the decode batch is the whole running batch: max_prefill_tokens binds prefill batches only
    ("BUDGET", 2, workload((1, 2, 7), (1, 2, 0), (1, 2, 0))),
    # SGLang reserves no KV for a running request's last token (sampled, never fed back): 3 x 2 + 8 <= 16
    ("KV", 3, workload((1, 4, 16), (1, 2, 0), (1, 2, 0), (1, 2, 0), (7, 1, 0))),
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


def test_at_sglangs_default_ratio_the_adder_admits_on_an_estimate() -> None:
    # rid 0 (1 + 5) runs; rid 1 (1 + 2) is admitted at step 1 on rid 0's remaining 4 tokens x 0.7: 9 > K 8
    # by the contract's account. At ratio 1.0 SGLang charges all 4 and waits.
    w = workload((1, 2, 8), (1, 5, 0), (1, 2, 0))
    with pytest.raises(RuleViolation) as broken:
        check_workload(w, SglangDefaultRatio, rules=["KV"])
    assert (broken.value.rule, broken.value.step) == ("KV", 1)
    check_workload(w, SglangScheduler, rules=["KV"])


def test_conform_on_sglang_judges_every_rule_at_one_slot() -> None:
    # One slot: a decode batch is one token, so BUDGET holds; PROGRESS and WORK-CONSERVING break at the
    # edge where prompt + max_new is the whole of K (the adder's strict comparison).
    report = conform(f"{ADAPTER}:SglangScheduler", budget=4, max_seqs=1, examples=4)
    assert NOT_JUDGED not in report.verdicts.values(), render(report)
    assert set(report.counterexamples) == {"PROGRESS", "WORK-CONSERVING"}, render(report)
    assert all(c.minimal for c in report.counterexamples.values())
    assert report.verdicts["NEVER-FIT"] == NOT_APPLICABLE
    assert {r for r, v in report.verdicts.items() if v == PASS} == {
        r for r in RULE_IDS if r not in {"PROGRESS", "WORK-CONSERVING", "NEVER-FIT", "CANCEL"}}


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
