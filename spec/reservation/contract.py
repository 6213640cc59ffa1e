"""The reservation design's rules as the base of other contracts: `keeping` builds a contract's rule
tuple from `RULES` (some left out, new ones beside their kind), and `ContractMonitor` judges such a
tuple with the reservation design's monitor (its shadow, facts and order of checks). Every variant's
contract, and a design built on the reservation design's rules (the toy design of
tests/test_toy_design.py), is made of these; the kernel's `Contract` names no design."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..contract import Contract
from ..rule import Rule
from ..types import Config
from .monitor import Monitor
from .rules import RULES


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
