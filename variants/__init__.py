"""Variants of the policy: sibling schedulers that reuse the spec, never flags in the reference's loop.

`Stepwise` is the contract's policy as small overridable steps (a second rendering, independent of
the reference, that keeps every rule). The comparison policies the simulator runs alter one of its
steps: `PrefillFirst` (chunked, prompts before decodes: breaks DECODE-FIRST by design) and
`UnchunkedPrefillFirst` (whole prompts in their own steps: breaks BUDGET by design). `StaticBatching`,
the baseline continuous batching replaced, closes each batch until it has finished (breaks
WORK-CONSERVING; its own contract is `stallfree.spec.variants.static`). The deliberately
wrong schedulers of `stallfree.faults` are built on `Stepwise` too.
"""

from .prefill_first import PrefillFirst
from .static import StaticBatching
from .stepwise import Stepwise
from .unchunked import UnchunkedPrefillFirst

__all__ = ["PrefillFirst", "StaticBatching", "Stepwise", "UnchunkedPrefillFirst"]
