"""The paged and prefix designs' contracts (spec/registry.py names them, and builds them here on first
use: a run that judges the reservation design never imports their monitors, shadows or rules)."""

from __future__ import annotations

from typing import Any

from stallfree.prefix.contract.invariants import PREFIX_INVARIANTS
from stallfree.prefix.contract.monitor import PrefixMonitor  # the prefix design's contract: layer 0
from stallfree.prefix.contract.rules import PREFIX_RULES

from .capability import CANCEL, STOP
from .contract import CONTENTS, STOPS, Contract
from .paged.invariants import PAGED_INVARIANTS
from .paged.monitor import PagedMonitor
from .paged.rules import PAGED_RULES
from .registry import DesignMonitor
from .types import Config


def in_blocks(scheduler: Any, config: Config) -> int:
    """KV held in blocks: the pool the contract defines (kv_tokens // block_size) less the free blocks
    the scheduler shows, read as the monitor reads them (a hosted scheduler's answer them over the pipe)."""
    block_size = scheduler.block_size
    return (config.kv_tokens // block_size - scheduler.free_blocks) * block_size  # type: ignore[no-any-return]


PAGED = Contract(
    "paged", PAGED_RULES, monitor=DesignMonitor(PagedMonitor), design="paged",
    invariants=PAGED_INVARIANTS, scheduler="stallfree.paged:Scheduler",
    faults="stallfree.faults.paged:PAGED_FAULTS", bound=PagedMonitor.work_bound, noun="paged rule",
    capability_rules=((STOP, ("TOKENS-KEPT", "BLOCKS", "PROGRESS")),
                      (CANCEL, ("CANCEL", "FCFS", "BLOCKS", "PROGRESS"))),
    guard="stallfree.conformance.isolation.paged_guard:PagedGuard", policies=(("paged", "stallfree.paged:Scheduler"),),
    held=in_blocks, drawer="stallfree.view.paged", executor="stallfree.executor.engine.paged:PagedExecutor",
)
PREFIX = Contract(
    "prefix", PREFIX_RULES, monitor=DesignMonitor(PrefixMonitor), design="prefix",
    invariants=PREFIX_INVARIANTS, scheduler="stallfree.prefix:Scheduler",
    faults="stallfree.prefix.faults:PREFIX_FAULTS", bound=PagedMonitor.work_bound, noun="prefix rule",
    carries=frozenset({STOPS, CONTENTS}),
    capability_rules=((STOP, ("TOKENS-KEPT", "BLOCKS", "FREE-AT-ZERO", "PROGRESS")),
                      (CANCEL, ("CANCEL", "FCFS", "BLOCKS", "FREE-AT-ZERO", "PROGRESS"))),
    guard="stallfree.conformance.isolation.paged_guard:PrefixGuard", held=in_blocks, drawer="stallfree.view.paged",
    executor="stallfree.executor.engine.prefix:PrefixExecutor",
)
