"""Replaying one workload under the monitor: what a pasted counterexample test calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from stallfree.spec import RunStats, Workload, play, registry


def check_workload(
    workload: Workload, factory: Callable[..., Any], rules: Iterable[str] | None = None, contract: str | None = None,
) -> RunStats:
    """Play `workload` through a fresh `factory(token_budget=, max_seqs=, kv_tokens=)`, checking `rules`
    (all when None) of `contract` (by name; None: the design the factory declares in `design`, the
    reservation's when it declares none). Raises RuleViolation naming the first broken rule."""
    return play(workload, factory, rules, contract=None if contract is None else registry.contract(contract))
