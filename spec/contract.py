"""A contract: the one record of a design, or of a variant's contract. Everything a consumer looks up
by a design's name is a field here: its rules, its monitor (and so its shadow), its work bound, the
least budget its schedulers take, the rules it widens, its reference scheduler and its faults, what a
played workload may carry under it, and how the kit, the simulator and the step view treat it.

The reference's contract is the reservation design's `RULES`. A variant that changes the contract
(block-aligned chunks, a budget that changes while running, priorities with aging) states its own
registry: the rules of `RULES` it keeps, each rule it widens under an ID of its own (so a report
never says a widened rule passed under the name of the one it widens), and its new rules;
`spec/reservation/contract.py`
builds such a registry (`keeping`) and judges it with the reservation design's monitor
(`ContractMonitor`). The kernel names no design: a contract names its own monitor.

Schedulers, faults, guards and views live in higher layers, so the contract names them as
MODULE:NAME targets that their consumers load; `stallfree.spec.registry` holds the values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .rule import Rule, select_from
from .types import Config

RESERVATION_DESIGN = "reservation"  # the memory design of the reference and of every variant contract
STOPS, BUDGETS, PRIORITIES, CONTENTS = "stops", "budgets", "priorities", "contents"  # what a workload carries


@dataclass(frozen=True, slots=True)
class Contract:
    """A named registry of rules and what judges it. `widens` maps each rule of `RULES` the contract
    leaves out to the rule that takes its place; `min_budget` is the smallest B the contract's
    schedulers accept; `monitor(scheduler, config, rules, contract)` builds its monitor (every
    contract names one: the kernel knows no design's); `bound(workload)` is its work bound (rule
    PROGRESS; None: `play.work_bound`)."""

    name: str
    rules: tuple[Rule, ...]
    widens: tuple[tuple[str, str], ...] = ()
    min_budget: int = 1
    monitor: Callable[..., Any] | None = None
    design: str = RESERVATION_DESIGN  # the memory design (a registry name) it is a contract of
    scheduler: str = "stallfree.reference:Scheduler"  # its reference scheduler, MODULE:FACTORY
    faults: str = ""  # MODULE:NAME of its wrong schedulers (each breaks one of its rules)
    bound: Callable[[Any], int] | None = None
    invariants: tuple[Any, ...] = ()  # its state invariants (`spec/invariant.py:Invariant`): the model checker's
    noun: str = ""  # what a rule of it is called in messages (default: "<name> rule")
    carries: frozenset[str] = frozenset({STOPS})  # what a played workload may carry beyond its requests
    capability_rules: tuple[tuple[str, tuple[str, ...]], ...] = ()  # capability -> the rules its tests judge
    guard: str = ""  # MODULE:CLASS of the kit's guard for its targets ("": the plain protocol's)
    policies: tuple[tuple[str, str], ...] = ()  # the simulator's scheduler names judged under it -> MODULE:FACTORY
    held: Callable[[Any, Config], int] | None = None  # KV tokens a scheduler holds (the simulator's memory report)
    drawer: str = ""  # the step view's module for its runs ("": the reservation design's table and view)
    executor: str = ""  # MODULE:CLASS of the executor that runs its plans on a model ("": no real path built)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.rules)

    @property
    def is_design(self) -> bool:
        """A design (its schedulers name it in `design`), not a variant's contract named by --contract."""
        return self.design == self.name

    def statement(self, rule_id: str) -> str:
        return next((r.statement for r in self.rules if r.id == rule_id), "")

    def select(self, ids: Iterable[str] | None = None) -> tuple[Rule, ...]:
        """The rules named in `ids` (all when None), in registry order; unknown IDs raise naming them."""
        return select_from(self.rules, ids, self.noun or f"{self.name} rule")

    def watch(self, scheduler: Any, config: Config, rules: Iterable[str] | None = None) -> Any:
        """A monitor of `scheduler` checking `rules` (all when None) of this contract."""
        if self.monitor is None:
            raise ValueError(f"contract {self.name!r} names no monitor: give it monitor=, e.g. the reservation "
                             "design's ContractMonitor (stallfree.spec.reservation.contract)")
        return self.monitor(scheduler, config, rules, self)

    def work_bound(self, workload: Any) -> int:
        """Steps within which every request of `workload` must have finished (rule PROGRESS)."""
        if self.bound is not None:
            return self.bound(workload)
        from .play import work_bound

        return work_bound(workload)
