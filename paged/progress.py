"""A read-only snapshot of one request's progress in the paged scheduler."""

from __future__ import annotations

from dataclasses import dataclass

from stallfree.spec.phase import Phase

__all__ = ["PagedProgress", "Phase"]  # Phase is the spec's, shared with the reservation design


@dataclass(frozen=True, slots=True)
class PagedProgress:
    rid: int
    phase: Phase
    prompt_len: int
    max_new: int
    num_computed: int  # tokens in KV: prompt positions and decoded tokens run in this residency
    num_emitted: int
    num_blocks: int  # blocks held now
    num_preemptions: int
