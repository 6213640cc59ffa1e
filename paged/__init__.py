"""The paged, preempting scheduler of stallfree: KV in blocks allocated as tokens are computed,
admission by a free-block watermark, recompute preemption of the newest running request. A sibling
of the reference, checked against `stallfree.spec.paged.rules` (profile `paged`)."""

from .plan import PagedPlan
from .progress import PagedProgress, Phase
from .scheduler import Scheduler, blocks_for, default_watermark, small_blocks

__all__ = ["PagedPlan", "PagedProgress", "Phase", "Scheduler", "blocks_for", "default_watermark", "small_blocks"]
