"""Deliberately wrong schedulers, one per rule: the negative controls of every check.

`FAULTS[rule_id]` is a plain-protocol scheduler class that breaks that rule; `Stepwise` is the
correct policy they each alter in one step. `MORE_FAULTS` holds further ones, each breaking its
rule (`breaks`) another way."""

from .catalog import FAULTS, MORE_FAULTS
from .stepwise import Stepwise

__all__ = ["FAULTS", "MORE_FAULTS", "Stepwise"]
