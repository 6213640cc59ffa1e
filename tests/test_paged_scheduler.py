"""The paged scheduler: blocks taken as tokens are computed, watermark admission, recompute
preemption of the newest running request, re-admission in line order, NEVER-FIT, stops and cancels;
every misuse refused with a clear error and nothing changed."""

from __future__ import annotations

import itertools
import random

import pytest

from stallfree.paged import PagedPlan, Phase, Scheduler
from stallfree.spec import Config, InvalidField, ProtocolError, RuleViolation
from stallfree.spec.paged.monitor import PagedMonitor


def state(s: Scheduler) -> tuple[object, ...]:
    return (s.waiting, s.running, s.free_blocks, s.num_steps, s.num_preemptions,
            [s.progress(r.rid) for r in s.running + s.waiting])


def run_to_idle(s: Scheduler, limit: int = 1000) -> dict[int, int]:
    tokens: dict[int, int] = {}
    for _ in range(limit):
        if s.is_idle:
            return tokens
        for rid in s.complete(s.schedule()):
            tokens[rid] = tokens.get(rid, 0) + 1
    raise AssertionError("did not drain")


def test_blocks_are_taken_as_tokens_are_computed_and_all_return() -> None:
    s = Scheduler(token_budget=8, max_seqs=4, kv_tokens=64, block_size=4, watermark=0)
    s.add(0, 6, 5)
    s.complete(s.schedule())  # the whole prompt: 6 tokens in KV, 2 blocks
    assert s.progress(0).num_blocks == 2 and s.free_blocks == 14
    s.complete(s.schedule())  # one decode: 7 tokens
    s.complete(s.schedule())  # 8 tokens, still 2 blocks
    assert s.progress(0).num_computed == 8 and s.progress(0).num_blocks == 2
    s.complete(s.schedule())  # the 9th token needs a third block
    assert s.progress(0).num_blocks == 3
    assert run_to_idle(s) == {0: 1}  # its last token: 5 emitted in all, the 5th ends it
    assert s.free_blocks == s.num_blocks


def test_PREEMPT_ORDER_the_newest_is_preempted_and_returns_ahead_of_later_arrivals() -> None:
    # 4 blocks of 1 token, no watermark: two requests of peak 4 cannot both grow.
    s = Scheduler(token_budget=4, max_seqs=4, kv_tokens=4, block_size=1, watermark=0)
    s.add(0, 1, 4)
    s.add(1, 1, 4)
    s.complete(s.schedule())  # both admitted: 1 block each
    s.add(2, 1, 1)  # arrives behind them; waits on the watermark-free but full pool later
    plans = []
    while not s.is_idle:
        plan = s.schedule()
        plans.append(plan)
        s.complete(plan)
    preempting = [p for p in plans if p.preempted]
    assert preempting and preempting[0].preempted == (1,)  # the newest, never the oldest
    assert not any(e.rid == 2 for e in preempting[0].entries)  # a step that preempts admits nothing
    readmitted = [next(i for i, p in enumerate(plans) if any(e.rid == r for e in p.entries)) for r in (1, 2)]
    assert readmitted[0] <= readmitted[1]  # rid 1 back before rid 2, which arrived after it


def test_RECOMPUTE_a_readmitted_request_prefills_prompt_plus_emitted_and_loses_no_token() -> None:
    s = Scheduler(token_budget=4, max_seqs=4, kv_tokens=4, block_size=1, watermark=0)
    s.add(0, 1, 4)
    s.add(1, 2, 3)
    tokens: dict[int, int] = {}
    chunks: list[tuple[int, int]] = []
    while not s.is_idle:
        plan = s.schedule()
        before = s.progress(1) if any(e.rid == 1 for e in plan.entries) else None
        if before is not None and before.num_preemptions and before.phase is Phase.PARTIAL:
            chunks.append((before.num_computed, next(e.n for e in plan.entries if e.rid == 1)))
        for rid in s.complete(plan):
            tokens[rid] = tokens.get(rid, 0) + 1
    assert s.num_preemptions >= 1 and s.num_recomputed > 0
    # Each residency after a preemption prefills from position 0, contiguous, up to prompt + emitted.
    assert chunks and chunks[0][0] == 0
    for (start, n), (next_start, _) in itertools.pairwise(chunks):
        assert next_start in (0, start + n)
    assert tokens == {0: 4, 1: 3}  # exactly max_new each, however often preempted
    assert s.free_blocks == s.num_blocks


def test_NEVER_FIT_refuses_a_request_that_could_never_run_alone_and_changes_nothing() -> None:
    s = Scheduler(token_budget=8, max_seqs=2, kv_tokens=32, block_size=4, watermark=1)  # 8 blocks, 7 usable
    s.add(0, 20, 9)  # peak 28 tokens = 7 blocks: fits alone
    before = state(s)
    with pytest.raises(InvalidField, match=r"rid 1 could never run alone") as error:
        s.add(1, 20, 10)  # 29 tokens = 8 blocks > 7
    assert "8 blocks of 4" in str(error.value) and "watermark of 1" in str(error.value)
    assert state(s) == before
    with pytest.raises(InvalidField, match="rid 0 is already taken"):
        s.add(0, 1, 1)
    with pytest.raises(TypeError, match="prompt_len must be an int"):
        s.add(2, 1.0, 1)  # type: ignore[arg-type]
    assert state(s) == before


def test_LONE_BLOCK_a_request_alone_gets_every_block_it_needs() -> None:
    """The largest request NEVER-FIT accepts runs alone to the end with no preemption."""
    for block_size, watermark in ((1, 0), (2, 1), (4, 0), (3, 2)):
        s = Scheduler(token_budget=3, max_seqs=1, kv_tokens=24, block_size=block_size, watermark=watermark)
        tokens = (s.num_blocks - watermark) * block_size
        s.add(0, tokens - 4, 5)  # prompt + max_new - 1 = every usable token
        assert run_to_idle(s) == {0: 5}
        assert s.num_preemptions == 0 and s.free_blocks == s.num_blocks


def test_misuse_is_refused_and_changes_nothing() -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=16, block_size=2, watermark=0)
    s.add(0, 3, 2)
    with pytest.raises(ProtocolError, match="without a pending plan"):
        s.complete(PagedPlan(0, ()))
    plan = s.schedule()
    with pytest.raises(ProtocolError, match="called again before complete"):
        s.schedule()
    before = state(s)
    with pytest.raises(ProtocolError, match="stopped names rid 7"):
        s.complete(plan, stopped=[7])
    with pytest.raises(InvalidField, match="stopped must be an iterable"):
        s.complete(plan, stopped=3)
    with pytest.raises(ProtocolError, match="not the pending one"):
        s.complete(PagedPlan(5, ()))
    assert state(s) == before
    assert s.complete(plan) == (0,)


def test_stop_ends_a_request_on_its_token_and_returns_its_blocks() -> None:
    s = Scheduler(token_budget=4, max_seqs=2, kv_tokens=16, block_size=2, watermark=0)
    s.add(0, 3, 10)
    assert s.complete(s.schedule()) == (0,)
    assert s.complete(s.schedule(), stopped=(0,)) == (0,)
    assert s.is_idle and s.free_blocks == s.num_blocks
    assert s.ended == (0,) and s.progress(0).phase is Phase.STOPPED  # readable until the next complete()
    assert s.progress(0).num_emitted == 2 and s.progress(0).num_blocks == 0
    s.complete(s.schedule())
    with pytest.raises(KeyError, match="no record of it is kept"):  # memory bounded: the record is gone
        s.progress(0)
    s.add(0, 3, 1)  # an ended request's rid is free again
    assert [r.rid for r in s.waiting] == [0]


def test_cancel_waiting_running_pending_and_twice() -> None:
    s = Scheduler(token_budget=2, max_seqs=1, kv_tokens=16, block_size=2, watermark=0)
    for rid in range(3):
        s.add(rid, 2, 3)
    s.complete(s.schedule())  # rid 0 runs; 1 and 2 wait (one slot)
    s.cancel(1)  # waiting: leaves the line
    assert [r.rid for r in s.waiting] == [2]
    plan = s.schedule()
    s.cancel(0)  # running, plan pending: the step still runs it, then it is gone
    assert s.complete(plan) == (0,)
    assert s.running == () and s.free_blocks == s.num_blocks
    with pytest.raises(KeyError, match=r"cancel\(0\): it is cancelled"):
        s.cancel(0)  # a second cancel is an error: the request is already gone
    with pytest.raises(KeyError, match="not waiting or running"):
        s.cancel(9)
    plan = s.schedule()
    s.cancel(2)
    with pytest.raises(KeyError, match="already being cancelled"):
        s.cancel(2)
    s.complete(plan)
    assert s.is_idle


def test_config_errors_name_the_field() -> None:
    with pytest.raises(InvalidField, match="block_size must be >= 1"):
        Scheduler(4, 2, 16, block_size=0)
    with pytest.raises(InvalidField, match="watermark must be <= the pool's 4 blocks"):
        Scheduler(4, 2, 16, block_size=4, watermark=5)
    with pytest.raises(TypeError, match="watermark must be an int"):
        Scheduler(4, 2, 16, watermark=0.5)  # type: ignore[arg-type]


def drive(factory, seed: int, stops: bool = True) -> PagedMonitor:  # type: ignore[no-untyped-def]
    """A random run under the paged monitor: arrivals, stops on emitted tokens, cancels (some while a
    plan is pending), then a drain."""
    rng = random.Random(seed)
    b, n, k = rng.choice([1, 2, 3, 5, 8]), rng.choice([1, 2, 3, 4]), rng.choice([6, 8, 12, 16, 24])
    m = PagedMonitor(factory(token_budget=b, max_seqs=n, kv_tokens=k), Config(b, n, k))
    rid = 0
    for _ in range(60):
        if rng.random() < 0.4:
            m.add(rid, rng.randint(1, 8), rng.randint(1, 8))
            rid += 1
        if rng.random() < 0.05:
            m.cancel(rng.randrange(rid + 1))
        m.plan()
        if rng.random() < 0.05:
            m.cancel(rng.randrange(rid + 1))
        m.complete([r for r in m.due() if stops and rng.random() < 0.05])
    bound = 1000
    while not m.is_idle and bound:
        m.step()
        bound -= 1
    return m


def test_the_paged_scheduler_keeps_every_paged_rule_under_random_runs() -> None:
    preemptions = 0
    for seed in range(150):
        m = drive(lambda **c: Scheduler(block_size=2, watermark=min(1, c["kv_tokens"] // 2), **c), seed)
        assert m.is_idle and m.scheduler.free_blocks == m.scheduler.num_blocks
        preemptions += m.scheduler.num_preemptions
    assert preemptions > 20  # the runs do preempt: the preemption rules were exercised


def test_the_monitor_reads_the_pool_the_scheduler_declares() -> None:
    class NoPool:
        pass

    with pytest.raises(RuleViolation, match="declares int block_size"):
        PagedMonitor(NoPool(), Config(1, 1, 1))
