"""Deliberately wrong schedulers, one per rule: the negative controls of every check.

`FAULTS[rule_id]` is a plain-protocol scheduler class that breaks that rule; each alters one step
of `stallfree.variants.Stepwise`, a correct rendering of the policy. `MORE_FAULTS` holds further ones, each breaking its
rule (`breaks`) another way."""

from .catalog import FAULTS, MORE_FAULTS

__all__ = ["FAULTS", "MORE_FAULTS"]
