"""An obligation of an induction: a hypothesis and a goal Z3 must find no model of the hypothesis
and the goal's negation for (`induction._prove` discharges them in order)."""

from __future__ import annotations

from dataclasses import dataclass

import z3


@dataclass(frozen=True)
class Obligation:
    name: str
    hypothesis: z3.BoolRef
    goal: z3.BoolRef
    witness: z3.BoolRef | None = None  # a stronger hypothesis easy to satisfy: a model of it shows this one holds
    premise: bool = False  # what the theorem is about (`fold`): if it fails, the theorem judges nothing: unknown
