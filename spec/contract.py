"""A variant's contract: a registry of rules shaped like `RULES`, and the monitor that judges it.

The reference's contract is `RULES`. A variant that changes the contract (block-aligned chunks, a
budget that changes while running, priorities with aging) states its own registry: the rules of
`RULES` it keeps, each rule it widens under an ID of its own (so a report never says a widened rule
passed under the name of the one it widens), and its new rules. `ContractMonitor` is the spec's
monitor judging such a registry; the shadow, the facts and the order of the checks are the monitor's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .monitor import Monitor
from .rules import RULES, Rule, select_from
from .types import Config


@dataclass(frozen=True, slots=True)
class Contract:
    """A named registry of rules. `widens` maps each rule of `RULES` the contract leaves out to the
    rule that takes its place; `min_budget` is the smallest B the contract's schedulers accept."""

    name: str
    rules: tuple[Rule, ...]
    widens: tuple[tuple[str, str], ...] = ()
    min_budget: int = 1
    monitor: type[ContractMonitor] = field(default=None)  # type: ignore[assignment]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.rules)

    def statement(self, rule_id: str) -> str:
        return next((r.statement for r in self.rules if r.id == rule_id), "")

    def select(self, ids: Iterable[str] | None = None) -> tuple[Rule, ...]:
        """The rules named in `ids` (all when None), in registry order; unknown IDs raise naming them."""
        return select_from(self.rules, ids, f"{self.name} rule")

    def watch(self, scheduler: Any, config: Config, rules: Iterable[str] | None = None) -> Monitor:
        """A monitor of `scheduler` checking `rules` (all when None) of this contract."""
        return (self.monitor or ContractMonitor)(scheduler, config, rules, self)


class ContractMonitor(Monitor):
    """The spec's monitor, judging the rules of `contract` instead of `RULES`."""

    def __init__(self, scheduler: Any, config: Config, rules: Iterable[str] | None, contract: Contract) -> None:
        super().__init__(scheduler, config, ())
        self.contract = contract
        self._watch(contract.select(rules))


def keeping(*left_out: str, extra: Iterable[Rule] = ()) -> tuple[Rule, ...]:
    """`RULES` without `left_out`, with `extra` after the safety rules they belong beside: each extra
    rule goes right after the last rule of `RULES` of its kind."""
    rules = [r for r in RULES if r.id not in left_out]
    for rule in extra:
        last = max((i for i, r in enumerate(rules) if r.kind is rule.kind), default=len(rules) - 1)
        rules.insert(last + 1, rule)
    return tuple(rules)
