"""Policies by name: the three the comparison runs (COMPARED: the reference and the two prefill-first
variants), and every name `simulate --scheduler` and `trace --scheduler` take (POLICIES), each with the
contract it is judged under (CONTRACTS). All read off the contracts of `stallfree.spec.registry`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.spec import registry
from stallfree.spec.utils.loader import load_target
from stallfree.spec.variants.aligned import (
    LISTED_BLOCKS as ALIGNED_BLOCKS,  # the block sizes of stallfree.variants.aligned
)

COMPARED: dict[str, str] = dict(registry.RESERVATION.policies)
POLICIES: dict[str, str] = {name: target for name, (target, _) in registry.policies().items()}
# The contract (by registry name) a named variant is judged under by `trace` and `simulate --check`.
CONTRACTS: dict[str, str] = {name: c.name for name, (_, c) in registry.policies().items() if not c.is_design}

__all__ = ["ALIGNED_BLOCKS", "COMPARED", "CONTRACTS", "POLICIES", "factory"]


def factory(name_or_target: str) -> Callable[..., Any]:
    """A policy by name, or any scheduler as MODULE:FACTORY."""
    return load_target(POLICIES.get(name_or_target, name_or_target), "--scheduler")
