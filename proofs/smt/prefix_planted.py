"""A planted bug for the prefix design's Z3 theorem FREE-AT-ZERO (`prefix_cache`): a copy of the prefix
scheduler whose `release` frees a shared block while another running request still holds it. The
registry's own FREE-AT-ZERO fault (`faults.FreeShared`) errs in `complete`, which that theorem is not
about; this one errs in the method it is about."""

from __future__ import annotations

from stallfree.paged.scheduler import PagedSequence
from stallfree.prefix.faults import PrefixFault


class FreeWhileHeld(PrefixFault):
    """Lets a shared block join the free cached blocks as soon as one of its holders lets it go."""

    breaks = "FREE-AT-ZERO"

    def release(self, seq: PagedSequence, held: int) -> int:
        freed = [key for key in self._shared[seq.rid][:held] if key is not None]
        still = super().release(seq, held)
        for key in freed:
            self._lru[key] = None
        return still
