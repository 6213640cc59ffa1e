"""The contract's hand trace, reproduced exactly, and the small cases the contract names."""

from __future__ import annotations

from stallfree.commands.trace import HAND_TRACE
from stallfree.reference import Phase, Scheduler
from stallfree.spec import Monitor


def test_hand_trace_chunks_7_7_6_first_token_in_step_3() -> None:
    cfg = HAND_TRACE.config
    assert cfg.token_budget == 8
    s = Scheduler(token_budget=8, max_seqs=cfg.max_seqs, kv_tokens=cfg.kv_tokens)
    m = Monitor(s, cfg)
    m.add(0, 8, 6)
    first = m.step()  # step 0: request 0's whole prompt, which emits its first token
    assert first.plan == [(0, 8)] and first.emitted == [0]
    m.add(1, 20, 3)  # a 20-token prompt arrives while request 0 decodes
    plans, emitted = [], []
    for _ in range(3):
        facts = m.step()
        plans.append(facts.plan)
        emitted.append(facts.emitted)
    assert plans == [[(0, 1), (1, 7)], [(0, 1), (1, 7)], [(0, 1), (1, 6)]]
    assert emitted == [[0], [0], [0, 1]]  # request 1's first token comes out of step 3
    assert s.progress(1).num_emitted == 1 and s.progress(1).phase is Phase.READY


def test_empty_scheduler_plans_an_empty_step() -> None:
    s = Scheduler(token_budget=8, max_seqs=4, kv_tokens=64)
    plan = s.schedule()
    assert list(plan) == []
    assert s.complete(plan) == ()


def test_max_new_1_leaves_on_the_step_its_prompt_completes() -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=20)
    m = Monitor(s, s.config)
    m.add(5, 10, 1)
    steps = [m.step() for _ in range(3)]
    assert [f.plan for f in steps] == [[(5, 4)], [(5, 4)], [(5, 2)]]
    assert [f.emitted for f in steps] == [[], [], [5]]
    assert [t.rid for t in steps[2].finished] == [5]
    assert s.free_kv == 20 and s.is_idle and s.progress(5).phase is Phase.FINISHED


def test_budget_1_prefills_one_token_chunks_and_decodes_crowd_out_prefill() -> None:
    # Budget 1: every prompt in one-token chunks; the single ready request crowds prefill out.
    s = Scheduler(token_budget=1, max_seqs=2, kv_tokens=20)
    m = Monitor(s, s.config)
    m.add(0, 2, 3)
    m.add(1, 2, 1)
    plans = []
    while not m.is_idle:
        plans.append(m.step().plan)
    assert plans == [[(0, 1)], [(0, 1)], [(0, 1)], [(0, 1)], [(1, 1)], [(1, 1)]]
