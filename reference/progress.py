"""A read-only snapshot of one request's progress, as the reference scheduler reports it."""

from __future__ import annotations

from dataclasses import dataclass

from stallfree.spec.phase import Phase

__all__ = ["Phase", "Progress"]  # Phase is the spec's, shared with the paged design


@dataclass(frozen=True, slots=True)
class Progress:
    rid: int
    phase: Phase
    prompt_len: int
    max_new: int
    num_prefilled: int
    num_emitted: int
