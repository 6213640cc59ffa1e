"""A wrong scheduler for the aging contract (`stallfree.spec.priority`): the negative control of AGING-BOUND."""

from __future__ import annotations

from stallfree.variants.priority import Prioritized


class NoAging(Prioritized):
    """Strict priority: a waiting request never gains a level, so a stream of higher-priority arrivals
    keeps a low-priority request waiting for as long as the stream lasts."""

    breaks = "AGING-BOUND"
    aging = None
