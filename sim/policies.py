"""The policies the comparison runs, by name: the reference and the two prefill-first variants."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.spec.loader import load_target

POLICIES: dict[str, str] = {
    "reference": "stallfree.reference:Scheduler",  # decodes first, chunked prefill (the contract)
    "prefill-first": "stallfree.variants.prefill_first:PrefillFirst",  # chunked, prompts before decodes
    "unchunked": "stallfree.variants.unchunked:UnchunkedPrefillFirst",  # whole prompts in their own steps
}


def factory(name_or_target: str) -> Callable[..., Any]:
    """A policy by name, or any scheduler as MODULE:FACTORY."""
    return load_target(POLICIES.get(name_or_target, name_or_target), "--scheduler")
