"""Policies by name: the three the comparison runs (COMPARED: the reference and the two prefill-first
variants), and every name `simulate --scheduler` and `trace --scheduler` take (POLICIES)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.spec.loader import load_target

ALIGNED_BLOCKS = (16, 32, 64, 128, 256)  # the block sizes of stallfree.variants.aligned

COMPARED: dict[str, str] = {
    "reference": "stallfree.reference:Scheduler",  # decodes first, chunked prefill (the contract)
    "prefill-first": "stallfree.variants.prefill_first:PrefillFirst",  # chunked, prompts before decodes
    "unchunked": "stallfree.variants.unchunked:UnchunkedPrefillFirst",  # whole prompts in their own steps
}
POLICIES: dict[str, str] = {
    **COMPARED,
    # The variants of docs/variants.md, each with the contract it keeps (CONTRACTS):
    **{f"aligned-{b}": f"stallfree.variants.aligned:Aligned{b}" for b in ALIGNED_BLOCKS},  # block-aligned
    "resizable": "stallfree.variants.batched:BatchedResizable",  # set_budget(B), decodes oldest first
    "rotating": "stallfree.variants.rotating:BatchedRotating",  # set_budget(B), decodes to the longest waiting
    "aging": "stallfree.variants.priority:BatchedPrioritized",  # admission by priority with aging (A = 64)
    "aging-4": "stallfree.variants.priority:Aging4",  # the same, A = 4 (the trace example)
    "no-aging": "stallfree.faults.priority:NoAging",  # strict priority: the negative control of AGING-BOUND
    "static": "stallfree.variants.static:StaticBatching",  # static batching: the teaching baseline
}
# The contract (stallfree.spec.contracts) a named variant is judged under by `trace` and `simulate --check`.
CONTRACTS: dict[str, str] = {
    **{f"aligned-{b}": f"aligned-{b}" for b in ALIGNED_BLOCKS},
    "resizable": "budget-change", "rotating": "rotation", "aging": "aging", "aging-4": "aging-4", "no-aging": "aging",
    "static": "static",
}


def factory(name_or_target: str) -> Callable[..., Any]:
    """A policy by name, or any scheduler as MODULE:FACTORY."""
    return load_target(POLICIES.get(name_or_target, name_or_target), "--scheduler")
