"""SGLang's new_token_ratio moving as SGLang's scheduler moves it (its own NewTokenRatioTracker: decayed
every decode step that fits, set to SGLang's estimate on a retraction, reset when idle), behind the
paged protocol: the falling ratio admits a request that the ratio held at 0.7 keeps waiting, and SGLang
retracts where the held ratio never does; the paged monitor judges that retraction (PREEMPT-BOUND and
PREEMPT-ORDER broken by SGLang's victim order, the safety rules holding), and a one-token leak planted
into SGLang's RadixCache at retraction is caught by BLOCKS."""

from __future__ import annotations

import pytest
from engine_workloads import workload
from sglang_guard import require_sglang

require_sglang()

from stallfree.conformance import check_workload  # noqa: E402
from stallfree.conformance.engines.sglang_decay import SglangDecayingRatio  # noqa: E402
from stallfree.conformance.engines.sglang_faults import CAUGHT_BY, RetractLeaksKv  # noqa: E402
from stallfree.conformance.engines.sglang_paged import SglangPaged  # noqa: E402
from stallfree.spec import RuleViolation, play, registry  # noqa: E402

# K 28, budget 8, 4 slots: by step 46 the ratio has fallen 39 decode steps, to 0.661, and SGLang admits
# rid 6 (2 + 13) beside rid 7 (4 + 13); at 0.7 rid 6 waits until rid 7 ends. At step 58 the two hold
# all 28 tokens, each one token from its end: SGLang retracts rid 7 (as many tokens out, longer prompt)
DECAY_RETRACTS = workload((8, 4, 28), (1, 11, 2), (4, 8, 2), (2, 12, 0), (1, 11, 2), (3, 7, 3), (1, 12, 1),
                          (2, 13, 19), (4, 13, 8), (2, 13, 6))
KEPT = ["BUDGET", "ONE-ENTRY", "SLOTS", "BLOCKS", "WATERMARK", "RECOMPUTE", "FIRST-TOKEN", "TOKENS-KEPT",
        "PROGRESS", "FCFS", "PARTIAL-NEXT"]


def _run(factory: type) -> list[tuple[int, list[tuple[int, int]], tuple[int, ...], float]]:
    """Each step: its number, its plan, its retracted rids and the ratio SGLang holds after it."""
    steps: list[tuple[int, list[tuple[int, int]], tuple[int, ...], float]] = []
    play(DECAY_RETRACTS, factory, KEPT, contract=registry.contract("paged"),
         on_step=lambda m, f: steps.append((f.step, list(f.plan), tuple(t.rid for t in f.preempted),
                                            m.scheduler.ratio())))
    return steps


def test_the_ratio_is_sglangs_own_tracker_from_sglangs_config() -> None:
    tracker = SglangDecayingRatio(8, 4, 28).ratio_tracker
    assert (tracker.init, tracker.min, tracker.current) == (0.7, pytest.approx(0.098), 0.7)
    assert tracker.decay == pytest.approx((0.7 - 0.098) / 600)


def test_the_falling_ratio_admits_early_and_sglang_retracts_where_the_held_ratio_never_does() -> None:
    held, decaying = _run(SglangPaged), _run(SglangDecayingRatio)
    assert [s[2] for s in held if s[2]] == []
    assert [(s[0], s[2]) for s in decaying if s[2]] == [(58, (7,))]
    admitted = {name: [s[0] for s in run if (6, 2) in s[1]] for name, run in (("held", held), ("decaying", decaying))}
    assert admitted == {"held": [58], "decaying": [46]}
    seen: set[int] = set()
    decays = 0  # the decode steps before step 45: every rid planned was planned before
    for _, plan, _, _ in decaying[:45]:
        decays += bool(plan) and all(rid in seen for rid, _ in plan)
        seen.update(rid for rid, _ in plan)
    assert decays == 39 and decaying[44][3] == pytest.approx(0.7 - 39 * (0.7 - 0.098) / 600)
    assert decaying[58][3] == 1.0  # SGLang's estimate after the retraction, at most 1.0
    assert decaying[59][3] == 1.0 and decaying[60][3] == 1.0  # rid 7's re-prefill steps leave it


def test_an_idle_sglang_resets_the_ratio() -> None:
    s = SglangDecayingRatio(4, 2, 16)
    s.add(0, 1, 4)
    ratios = []
    for _ in range(5):  # its prefill, three decodes, then a step with nothing to run
        s.complete(s.schedule())
        ratios.append(s.ratio())
    assert ratios[:4] == [0.7, *(pytest.approx(0.7 - k * (0.7 - 0.098) / 600) for k in (1, 2, 3))]
    assert ratios[4] == 0.7


@pytest.mark.parametrize(("rule", "message"), [
    ("PREEMPT-BOUND", "the oldest running request, rid 7, was preempted"),
    ("PREEMPT-ORDER", "preempted [7]; the newest running requests, newest first, are [6]"),
])
def test_what_the_decayed_retraction_breaks_replays_on_sglang(rule: str, message: str) -> None:
    check_workload(DECAY_RETRACTS, SglangPaged, rules=[rule])  # at the held ratio nothing is retracted
    with pytest.raises(RuleViolation) as broken:
        check_workload(DECAY_RETRACTS, SglangDecayingRatio, rules=[rule])
    assert (broken.value.rule, broken.value.step) == (rule, 58)
    assert message in broken.value.message


def test_a_kv_leak_planted_in_sglangs_retraction_is_caught() -> None:
    rule = CAUGHT_BY[RetractLeaksKv]
    check_workload(DECAY_RETRACTS, SglangDecayingRatio, rules=[rule])  # SGLang's own RadixCache frees it all
    with pytest.raises(RuleViolation) as broken:
        check_workload(DECAY_RETRACTS, RetractLeaksKv, rules=[rule])
    assert (broken.value.rule, broken.value.step) == (rule, 58)
    assert "free_blocks=27 after the step" in broken.value.message
