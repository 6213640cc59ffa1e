"""The first rule a scheduler breaks over a list of workloads, for the tests of the variants' contracts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from stallfree.spec import RuleViolation, Workload, play


def first_violation(workloads: Iterable[Workload], factory: Callable[..., Any], contract: Any,
                    rules: list[str] | None = None) -> RuleViolation | None:
    """The violation of the first of `workloads` on which `factory` breaks one of `rules` (all when None)
    of `contract`, or None when it breaks none."""
    for workload in workloads:
        try:
            play(workload, factory, rules, contract=contract)
        except RuleViolation as violation:
            return violation
    return None
