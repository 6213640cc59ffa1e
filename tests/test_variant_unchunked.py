"""Unchunked prefill-first keeps the protocol of every Stepwise policy: a cancel of a running request
while its plan is pending takes effect when complete() runs (rule CANCEL), not at once."""

from __future__ import annotations

from stallfree.spec import Config, Monitor
from stallfree.variants.unchunked import UnchunkedPrefillFirst

CONFIG = Config(8, 4, 64)


def test_CANCEL_while_a_plan_is_pending_takes_effect_at_complete() -> None:
    scheduler = UnchunkedPrefillFirst(CONFIG.token_budget, CONFIG.max_seqs, CONFIG.kv_tokens)
    monitor = Monitor(scheduler, CONFIG)
    assert monitor.add(0, 3, 4) and monitor.add(1, 3, 4)
    monitor.step()  # both prompts whole, one token each
    plan = monitor.plan()  # the decodes of rid 0 and rid 1
    assert [rid for rid, _ in plan] == [0, 1]
    monitor.cancel(0)  # pending: it ends when complete() runs
    facts = monitor.complete()
    assert 0 not in monitor.scheduler.running and 1 in monitor.scheduler.running  # running: rid -> request
    assert facts.step == 1
    assert [rid for rid, _ in monitor.plan()] == [1]  # never planned again
