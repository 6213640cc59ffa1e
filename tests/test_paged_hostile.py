"""The paged monitor cuts what a hostile paged scheduler returns, as the reservation monitor does: an
endless plan, an endless list of preempted rids or an endless emitted list is a PROTOCOL violation
naming the bound, never a hang."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from stallfree.paged import PagedPlan, Scheduler
from stallfree.spec import Config, RuleViolation
from stallfree.spec.paged.monitor import PagedMonitor

CONFIG = Config(4, 2, 16)


@dataclass(frozen=True, slots=True)
class _EndlessEntries(PagedPlan):
    def __iter__(self) -> Any:
        return itertools.repeat((0, 1))


class EndlessPlan(Scheduler):
    def schedule(self) -> Any:
        plan = super().schedule()
        return _EndlessEntries(plan.step, plan.entries)


class EndlessPreempted(Scheduler):
    def schedule(self) -> Any:
        plan = super().schedule()
        return PagedPlan(plan.step, plan.entries, itertools.repeat(0))  # type: ignore[arg-type]


class EndlessEmitted(Scheduler):
    def complete(self, plan: Any, stopped: Any = ()) -> Any:
        super().complete(plan, stopped)
        return itertools.repeat(0)


@pytest.mark.parametrize(("cls", "said"), [
    (EndlessPlan, "schedule() returned more than 1,000,000 entries"),
    (EndlessPreempted, "the plan's preempted holds over 1,000,000 rids"),
    (EndlessEmitted, "complete() returned more than 1,000,000 rids"),
])
def test_an_endless_iterable_from_a_paged_scheduler_is_cut_and_named(cls: type, said: str) -> None:
    scheduler = cls(CONFIG.token_budget, CONFIG.max_seqs, CONFIG.kv_tokens, block_size=2, watermark=0)
    monitor = PagedMonitor(scheduler, CONFIG)
    monitor.add(0, 2, 2)
    with pytest.raises(RuleViolation) as caught:
        monitor.step()
    assert caught.value.rule == "PROTOCOL" and said in str(caught.value), caught.value
