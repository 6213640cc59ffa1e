"""The reference scheduler of stallfree: minimal, readable, and checked against `stallfree.spec`."""

from .progress import Phase, Progress
from .scheduler import Scheduler

__all__ = ["Phase", "Progress", "Scheduler"]
