"""The exercises, by number: each made for a learner (exercises 1 to 3 draw their instance from the
learner's seed; 4 and 5 are one task for all, judged on workloads drawn afresh at each grading)."""

from __future__ import annotations

import random
from collections.abc import Callable

from . import costs, predict
from .base import Exercise, learner_seed
from .schedulers import BREAK, FIX, STARTER, resource

MAKERS: dict[int, Callable[[random.Random], Exercise]] = {
    1: predict.exercise, 2: costs.tpot, 3: costs.ridge_exercise, 4: lambda rng: BREAK, 5: lambda rng: FIX,
}
PER_LEARNER = (1, 2, 3)  # the exercises whose instance depends on the learner
STARTERS = {FIX.number: STARTER}  # exercises that start from a file: `stallfree exercise N --starter`


def exercise(number: int, learner: str) -> Exercise:
    """Exercise `number` as `learner` gets it; KeyError if there is none."""
    return MAKERS[number](random.Random(learner_seed(number, learner)))


def titles() -> dict[int, str]:
    return {number: exercise(number, "").title for number in MAKERS}


def starter(number: int) -> str:
    return resource(STARTERS[number])
