"""The prefix-caching design under its monitor: random sessions whose prompts share prefixes (system
prompts, a conversation's earlier turns, whole prompts again), with stops and cancels. The correct
scheduler keeps every rule; each fault is caught, naming its rule and no other (the negative controls),
and the paged faults run on the prefix scheduler are caught by the rules the prefix design re-reads."""

from __future__ import annotations

import random

import pytest

from stallfree.faults import paged as paged_faults
from stallfree.prefix import Scheduler
from stallfree.prefix.contract.monitor import PrefixMonitor
from stallfree.prefix.faults import PREFIX_FAULTS, EvictNewest, small
from stallfree.spec.errors import RuleViolation

RUNS = 60


def content_of(rng: random.Random, prompt_len: int, earlier: list[tuple[tuple[int, int], ...]]) -> tuple:
    """A shared system prompt, an earlier prompt's content extended (a next turn), the same again, or none."""
    kind = rng.randrange(4)
    if kind == 0 or not earlier:
        system = ((rng.randrange(3), rng.randint(1, 6)),)
        content = system if sum(n for _, n in system) <= prompt_len else ()
    elif kind == 1:
        base = rng.choice(earlier)
        used = sum(n for _, n in base)
        content = (*base, (100 + rng.randrange(50), prompt_len - used)) if used < prompt_len else base
    elif kind == 2:
        content = rng.choice(earlier)
    else:
        content = ()
    return content if sum(n for _, n in content) <= prompt_len else ()


def session(factory, seed: int) -> tuple[PrefixMonitor, dict[str, int]]:
    """One random session; returns the monitor and how often hits, evictions and preemptions happened."""
    rng = random.Random(seed)
    budget, slots, kv = rng.randint(2, 8), rng.randint(1, 4), 2 * rng.randint(4, 14)
    m = PrefixMonitor(factory(budget, slots, kv), factory(budget, slots, kv).config)
    usable = (m.shadow.pool.num_blocks - m.shadow.pool.watermark) * m.shadow.pool.block_size
    earlier: list[tuple] = []
    rid = 0
    for _ in range(rng.randint(10, 30)):
        for _ in range(rng.choice((0, 0, 1, 2))):
            peak = rng.randint(1, max(1, min(usable, 14)))
            max_new = rng.randint(1, min(peak, 4))
            prompt_len = peak - max_new + 1
            content = content_of(rng, prompt_len, earlier)
            if m.add(rid, prompt_len, max_new, content) and content:
                earlier.append(content)
            rid += 1
        if rng.random() < 0.05:
            m.add(rid, usable + 1, 1)  # its peak cannot fit: NEVER-FIT refuses it
            rid += 1
        if rng.random() < 0.1 and m.shadow.tracks:
            m.cancel(rng.choice(sorted(m.shadow.tracks)))
        m.plan()
        m.complete([r for r in m.due() if rng.random() < 0.15])
    for _ in range(m.work_bound_of(m.shadow)):
        if m.is_idle:
            break
        m.step()
    assert m.is_idle, "drained within the work bound"
    scheduler = m.scheduler
    return m, {"hits": scheduler.num_hits, "evictions": scheduler.num_evictions,
               "preemptions": scheduler.num_preemptions}


def test_the_prefix_scheduler_keeps_every_rule_with_hits_evictions_and_preemptions() -> None:
    totals = {"hits": 0, "evictions": 0, "preemptions": 0}
    for seed in range(RUNS):
        m, counts = session(small, seed)
        assert m.shadow.free_blocks == m.shadow.pool.num_blocks
        for name, n in counts.items():
            totals[name] += n
    assert all(totals.values()), totals  # the sessions reach what the rules are about


def test_plain_protocol_adds_share_nothing() -> None:
    s = Scheduler(8, 2, 32, block_size=2, watermark=0)
    m = PrefixMonitor(s, s.config)
    for rid in range(3):
        m.add(rid, 6, 2)
    while not m.is_idle:
        m.step()
    assert s.num_hits == 0 and s.cached == ()


@pytest.mark.parametrize("fault", PREFIX_FAULTS, ids=lambda f: f.breaks)
def test_each_prefix_fault_is_caught_naming_its_rule(fault) -> None:
    named = set()
    for seed in range(RUNS):
        try:
            session(fault, seed)
        except RuleViolation as violation:
            named.add(violation.rule)
    assert named == {fault.breaks}


PAGED_ON_PREFIX = [
    type(f"Prefix{f.__name__}", (f, Scheduler), {}) for f in
    (paged_faults.LeakOnEnd, paged_faults.RequeueAtBack, paged_faults.PreemptOldest, paged_faults.OverRun,
     paged_faults.CancelIgnored, paged_faults.AcceptTooLarge)
]


@pytest.mark.parametrize("fault", PAGED_ON_PREFIX, ids=lambda f: f.breaks)
def test_paged_faults_on_the_prefix_scheduler_are_caught_naming_their_rule(fault) -> None:
    named = set()
    for seed in range(RUNS):
        try:
            session(fault, seed)
        except RuleViolation as violation:
            named.add(violation.rule)
    assert named == {fault.breaks}


def test_evicting_the_newest_is_caught_as_evict_lru_or_as_the_hit_it_spoils() -> None:
    """EvictNewest breaks EVICT-LRU; where its victim is a block the same step's admission would hit,
    the admission's short hit (CACHED-NOT-PREFILLED) is judged first."""
    named: list[str] = []
    for seed in range(RUNS):
        try:
            session(EvictNewest, seed)
        except RuleViolation as violation:
            named.append(violation.rule)
    assert set(named) <= {"EVICT-LRU", "CACHED-NOT-PREFILLED"}
    assert named.count("EVICT-LRU") > len(named) // 2


def test_a_recomputed_request_leaves_no_stale_copy_of_its_own_blocks_in_the_cache() -> None:
    """Found by the state machine: a preempted request re-admitted with a hit shorter than its own
    cached blocks computes the rest again; the old copies must not stay cached under the same keys
    (FREE-AT-ZERO would see a block shown free while the request holds its key)."""
    s = Scheduler(4, 3, 22, block_size=2, watermark=0)
    m = PrefixMonitor(s, s.config)
    m.add(0, 11, 6)
    m.add(1, 1, 1)
    m.add(2, 4, 1, ((0, 4),))
    m.add(3, 4, 4, ((0, 4),))
    while not m.is_idle:
        m.step()
    assert s.num_preemptions == 1 and s.num_hits == 2
