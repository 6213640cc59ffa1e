"""The exercises, by number."""

from __future__ import annotations

from .base import Exercise
from .costs import RIDGE, TPOT
from .predict import EXERCISE as PREDICT
from .schedulers import BREAK, FIX, STARTER, resource

EXERCISES: dict[int, Exercise] = {e.number: e for e in (PREDICT, TPOT, RIDGE, BREAK, FIX)}
STARTERS = {FIX.number: STARTER}  # exercises that start from a file: `stallfree exercise N --starter`


def starter(number: int) -> str:
    return resource(STARTERS[number])
