"""Deliberately wrong schedulers, one per rule: the negative controls of every check.

`FAULTS[rule_id]` is a plain-protocol scheduler class that breaks that rule; each alters one step
of `stallfree.variants.Stepwise`, a correct rendering of the policy. `MORE_FAULTS` holds further ones,
each breaking its rule (`breaks`) another way. `LIFECYCLE_FAULTS` holds one for each way a stop or a
cancel can be handled wrong, each breaking its rule (`breaks`): they need a workload with stops and
cancels."""

from .catalog import FAULTS, MORE_FAULTS
from .lifecycle import LIFECYCLE_FAULTS

__all__ = ["FAULTS", "LIFECYCLE_FAULTS", "MORE_FAULTS"]
